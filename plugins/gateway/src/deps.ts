/**
 * What the gateway's parts share: the plugin context, the effective settings and the kernel's information.
 */
import type { FastifyRequest } from 'fastify';
import type { KernelInfoCapability, PluginContext } from '../../../sdk/index.js';

export interface GatewaySettings {
  port: number;
  host: string;
  apiKey?: string;
  staticDir?: string;
  corsOrigins: string[];
  bodyLimit: number;
}

export interface GatewayDeps {
  ctx: PluginContext;
  settings: GatewaySettings;
  info: KernelInfoCapability;
}

/** The settings from configuration (command-line values arrive as config overrides). */
export function readSettings(ctx: PluginContext): GatewaySettings {
  const get = <T>(k: string) => ctx.config.get<T>(k);
  const apiKey = get<string | undefined>('gatewayApiKey');
  const staticDir = get<string | undefined>('gatewayStaticDir');
  return {
    port: get<number>('gatewayPort'),
    host: get<string>('gatewayHost'),
    ...(apiKey ? { apiKey } : {}),
    ...(staticDir ? { staticDir } : {}),
    corsOrigins: get<string[]>('gatewayCorsOrigins'),
    bodyLimit: get<number>('gatewayBodyLimit'),
  };
}

/** True when the request came over the loopback interface. */
export function isLoopback(req: FastifyRequest): boolean {
  const ip = req.socket.remoteAddress ?? '';
  return ip === '127.0.0.1' || ip === '::1' || ip.startsWith('127.') || ip === '::ffff:127.0.0.1';
}

/** True when the gateway listens on loopback only. */
export function loopbackOnly(host: string): boolean {
  return host === '127.0.0.1' || host === 'localhost' || host === '::1' || host.startsWith('127.');
}
