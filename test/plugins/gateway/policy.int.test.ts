/**
 * Without an API key, clients beyond loopback may not change LOCKED keys or security settings (403), and the
 * gateway warns loudly when it listens beyond loopback without a key. The non-loopback client is real: the test
 * connects to this machine's own non-loopback address.
 */
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gw } from './harness.js';

const external = Object.values(networkInterfaces())
  .flat()
  .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;

async function put(g: Gw, host: string, path: string, body: unknown, key?: string) {
  const r = await fetch(`http://${host}:${g.port}${path}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', ...(key ? { 'x-api-key': key } : {}) },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as any };
}

describe.skipIf(!external)('policy for clients beyond loopback', () => {
  let open: Gw;
  let keyed: Gw;
  beforeAll(async () => {
    open = await startGateway({ overrides: { gatewayHost: '0.0.0.0' }, fakeAgent: true });
    keyed = await startGateway({ overrides: { gatewayHost: '0.0.0.0', gatewayApiKey: 'remote-key' }, fakeAgent: true });
  });
  afterAll(async () => {
    await open?.close();
    await keyed?.close();
  });

  it('warns loudly at start when listening beyond loopback without a key, and not with a key', () => {
    const errors = open.kernel.logs
      .recent({ level: 'error' })
      .map((e) => e.message)
      .join('\n');
    expect(errors).toMatch(/WITHOUT an API key/);
    expect(errors).toMatch(/controls the agent/);
    expect(
      keyed.kernel.logs
        .recent({ level: 'error' })
        .map((e) => e.message)
        .join('\n'),
    ).not.toMatch(/WITHOUT an API key/);
  });

  it('refuses security settings and LOCKED keys from a remote client without a key (403), allows other keys', async () => {
    const sec = await put(open, external!, '/api/security', { safeMode: true });
    expect(sec.status).toBe(403);
    expect(sec.body).toEqual({ error: 'Forbidden', message: expect.stringMatching(/loopback/) });
    const locked = await put(open, external!, '/api/config/safeMode', { value: true });
    expect(locked.status).toBe(403);
    expect(locked.body.message).toMatch(/LOCKED/);
    const lockedGateway = await put(open, external!, '/api/config/gatewayCorsOrigins', { value: ['https://x.example'] });
    expect(lockedGateway.status).toBe(403);
    expect(open.kernel.config.get('safeMode')).toBe(false);
    expect(open.kernel.config.get('gatewayCorsOrigins')).toEqual(['*']);

    const safe = await put(open, external!, '/api/config/fakeAgentGreeting', { value: 'remote hello' });
    expect(safe.status).toBe(200);
    const r = await fetch(`http://${external}:${open.port}/api/status`);
    expect(r.status).toBe(200);
    expect(((await r.json()) as any).safeMode).toBe(false);
  });

  it('lets a loopback client change them on the same gateway', async () => {
    expect((await put(open, '127.0.0.1', '/api/security', { safeMode: true })).status).toBe(200);
    expect(open.kernel.config.get('safeMode')).toBe(true);
    expect((await put(open, '127.0.0.1', '/api/config/safeMode', { value: false })).status).toBe(200);
    expect(open.kernel.config.get('safeMode')).toBe(false);
  });

  it('lets an authenticated remote client change them', async () => {
    expect((await put(keyed, external!, '/api/security', { safeMode: true }, 'remote-key')).status).toBe(200);
    expect((await put(keyed, external!, '/api/config/safeMode', { value: false }, 'remote-key')).status).toBe(200);
    expect((await put(keyed, external!, '/api/security', { safeMode: true })).status).toBe(401);
  });
});
