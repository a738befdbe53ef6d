/**
 * What the gateway's parts share: the plugin context, the effective settings and the kernel's information.
 */
import type { FastifyRequest } from 'fastify';
import type { KernelInfoCapability, PluginContext } from '../../../sdk/index.js';
import type manifest from '../manifest.js';

export interface GatewaySettings {
  port: number;
  host: string;
  apiKey?: string;
  staticDir?: string;
  corsOrigins: readonly string[];
  bodyLimit: number;
}

export interface GatewayDeps {
  ctx: PluginContext<typeof manifest>;
  settings: GatewaySettings;
  info: KernelInfoCapability;
}

/** The settings from configuration (command-line values arrive as config overrides). */
export function readSettings(ctx: PluginContext<typeof manifest>): GatewaySettings {
  const { config } = ctx;
  const apiKey = config.get('gatewayApiKey');
  const staticDir = config.get('gatewayStaticDir');
  return {
    port: config.get('gatewayPort'),
    host: config.get('gatewayHost'),
    ...(apiKey ? { apiKey } : {}),
    ...(staticDir ? { staticDir } : {}),
    corsOrigins: config.get('gatewayCorsOrigins'),
    bodyLimit: config.get('gatewayBodyLimit'),
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
