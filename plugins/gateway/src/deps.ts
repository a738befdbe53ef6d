/**
 * What the gateway's parts share: the plugin context, the effective settings and the kernel's information.
 */
import { hostname } from 'node:os';
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

/** True when the TCP peer is this machine (the loopback interface). */
export function peerIsLoopback(req: FastifyRequest): boolean {
  const ip = req.socket.remoteAddress ?? '';
  return ip === '127.0.0.1' || ip === '::1' || ip.startsWith('127.') || ip.startsWith('::ffff:127.');
}

/** Headers a proxy adds: their presence (never their value, which anyone can write) says a proxy forwarded it. */
const FORWARDING = ['forwarded', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-real-ip', 'via'] as const;

/** This machine's own name (Debian maps it to 127.0.1.1), which a page elsewhere cannot make a browser use. */
const OWN_NAME = hostname().toLowerCase();

/**
 * `localhost`, `*.localhost`, 127.x.x.x, ::1 and this machine's own name (a host name, without a port; IPv6 with
 * or without brackets). Not 0.0.0.0: browsers reached local services through it ("0.0.0.0 day").
 */
export function isLoopbackName(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return (
    h === 'localhost' ||
    h.endsWith('.localhost') ||
    h === '::1' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) ||
    (h !== '' && h === OWN_NAME)
  );
}

/** The host name of a Host header (`name:port`, `[v6]:port`), lower-case. */
function hostName(header: string): string {
  const h = header.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  return h.split(':')[0] ?? '';
}

/** Whether an Origin header names a page served by this machine (`null`, from a file or a sandbox, does not). */
export function isLoopbackOrigin(origin: string): boolean {
  try {
    return isLoopbackName(new URL(origin).hostname);
  } catch {
    return false;
  }
}

/**
 * Why a request whose TCP peer is loopback still does not come from this machine, or undefined when nothing says
 * so: a reverse proxy on this machine forwarded it (it adds forwarding headers; SPEC has TLS terminated by one),
 * it names another host (a DNS-rebinding page, or a proxy passing the public Host on), or a web page from
 * elsewhere sent it (its Origin). Such a request gets none of the rights of a local one.
 */
export function notFromThisMachine(req: FastifyRequest): string | undefined {
  const h = req.headers;
  for (const name of FORWARDING) if (h[name] !== undefined) return `a proxy forwarded it (${name} header)`;
  const host = typeof h.host === 'string' ? hostName(h.host) : '';
  if (host && !isLoopbackName(host)) return `it is addressed to ${host}`;
  const origin = h.origin;
  if (typeof origin === 'string' && !isLoopbackOrigin(origin)) return `a web page at ${origin} sent it`;
  return undefined;
}

/** True when the request came from this machine: over loopback, and nothing in it says otherwise. */
export function isLoopback(req: FastifyRequest): boolean {
  return peerIsLoopback(req) && notFromThisMachine(req) === undefined;
}

/** True when the gateway listens on loopback only. */
export function loopbackOnly(host: string): boolean {
  return host === '127.0.0.1' || host === 'localhost' || host === '::1' || host.startsWith('127.');
}
