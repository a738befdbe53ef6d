/**
 * Test support for the gateway: a real kernel with the gateway listening on 127.0.0.1, port 0.
 */
import { request } from 'node:http';
import { join } from 'node:path';
import type { Kernel } from '../../../kernel/kernel.js';
import { bootKernel, installFakeAgent } from '../../../testing/index.js';
import { writePlugin } from '../../helpers.js';

export interface Gw {
  kernel: Kernel;
  home: string;
  base: string;
  port: number;
  /** fetch relative to the gateway, with the key (when given) in X-Api-Key. */
  req(path: string, init?: RequestInit & { key?: string | null; json?: unknown }): Promise<Response>;
  close(): Promise<void>;
}

export async function startGateway(
  o: {
    overrides?: Record<string, unknown>;
    env?: Record<string, string>;
    home?: string;
    key?: string;
    before?: (home: string) => void;
    /** Install keel/sdk/testing's (testing/) fake agent (skill `echo`, secret key `fakeAgentApiKey`) in place of the built-in agent. */
    fakeAgent?: boolean;
    /** Built-in plugins to keep out (their capabilities or skill names are faked by test plugins). */
    deny?: string[];
  } = {},
): Promise<Gw> {
  const deny = [...(o.fakeAgent ? ['agent'] : []), ...(o.deny ?? [])];
  const t = await bootKernel({
    ...(o.home ? { home: o.home } : {}),
    builtins: true,
    // The built-ins would provide the same capabilities or skills; the config file (not an override) keeps the
    // list changeable through PUT /api/security.
    ...(deny.length ? { configYaml: `pluginDenyList:\n${deny.map((d) => `  - ${d}\n`).join('')}` } : {}),
    before: (home) => {
      if (o.fakeAgent) installFakeAgent(home);
      o.before?.(home);
    },
    env: o.env ?? {},
    config: { gatewayAutoStart: true, gatewayPort: 0, gatewayHost: '127.0.0.1', ...o.overrides },
  });
  const { kernel, home } = t;
  const status = kernel.host.status('gateway');
  if (status?.state !== 'loaded') {
    await t.close();
    throw new Error(`gateway did not start: ${status?.reason ?? 'no status'}`);
  }
  const addr = kernel.registry.use<{ host: string; port: number; url: string }>('gateway:address');
  if (!addr) throw new Error('gateway:address not provided');
  const base = `http://127.0.0.1:${addr.port}`;
  return {
    kernel,
    home,
    base,
    port: addr.port,
    req(path, init = {}) {
      const { key = o.key ?? null, json, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (key !== null && key !== undefined) headers.set('x-api-key', key);
      if (json !== undefined) {
        headers.set('content-type', 'application/json');
        return fetch(base + path, { ...rest, headers, body: JSON.stringify(json) });
      }
      return fetch(base + path, { ...rest, headers });
    },
    close: t.close,
  };
}

/** A raw HTTP request: the path goes out exactly as given (no URL normalisation), for traversal and fuzz tests. */
export function raw(
  port: number,
  o: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer; host?: string },
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const headers = { ...o.headers };
    if (o.body !== undefined) headers['content-length'] = String(Buffer.byteLength(o.body));
    const r = request({ host: o.host ?? '127.0.0.1', port, method: o.method ?? 'GET', path: o.path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    r.on('error', reject);
    if (o.body !== undefined) r.write(o.body);
    r.end();
  });
}

/** A user plugin (plain JS) that provides `memory` and `channel:chatA` with fixed data. */
export function writeMemoryAndChannelPlugin(home: string): void {
  writePlugin(join(home, 'plugins'), {
    id: 'fake-memory',
    manifest: { kind: 'service', provides: ['memory', 'channel:chatA'] },
    setup: `
      const entries = [
        { id: 'm1', type: 'short', content: 'saw the weather page', timestamp: '2026-01-01T00:00:00.000Z', metadata: { actionId: 'act_1_a', step: 1 } },
        { id: 'm2', type: 'episodic', content: 'summarised the weather', timestamp: '2026-01-01T00:01:00.000Z', metadata: { actionId: 'act_1_a', step: 2 } },
        { id: 'm3', type: 'long', content: 'user likes tea', timestamp: '2026-01-01T00:02:00.000Z', metadata: {} },
      ];
      ctx.provide('memory', {
        counts: () => ({ short: 1, episodic: 1, long: 1 }),
        list: ({ type, limit, search }) => {
          const hits = entries.filter((e) => (!type || e.type === type) && (!search || e.content.includes(search)));
          return { memories: hits.slice(0, limit), total: hits.length };
        },
      });
      ctx.provide('channel:chatA', { name: 'chatA', status: () => ({ enabled: true, connected: true, botUsername: 'keelbot', botId: 42 }) });
    `,
  });
}
