/**
 * API key (no key / wrong key / right key over every endpoint) and CORS, against a real gateway.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readQueueList } from '../../../kernel/queue/index.js';
import { startGateway, type Gw } from './harness.js';

const KEY = 'correct-horse-battery-staple';

const ENDPOINTS: Array<{ method: string; path: string; body?: unknown; ok: number }> = [
  { method: 'GET', path: '/api/status', ok: 200 },
  { method: 'GET', path: '/api/skills', ok: 200 },
  { method: 'POST', path: '/api/skills/echo/execute', body: { parameters: { text: 'hi' } }, ok: 200 },
  { method: 'POST', path: '/api/tasks', body: { task: 'authorised task' }, ok: 201 },
  { method: 'GET', path: '/api/tasks', ok: 200 },
  { method: 'GET', path: '/api/config', ok: 200 },
  { method: 'PUT', path: '/api/config/fakeAgentGreeting', body: { value: 'hey' }, ok: 200 },
  { method: 'GET', path: '/api/memory', ok: 200 },
  { method: 'GET', path: '/api/connections', ok: 200 },
  { method: 'GET', path: '/api/logs', ok: 200 },
  { method: 'GET', path: '/api/security', ok: 200 },
  { method: 'PUT', path: '/api/security', body: { safeMode: false }, ok: 200 },
  { method: 'GET', path: '/api/openapi.json', ok: 200 },
];

describe('gateway with an API key', () => {
  let g: Gw;
  beforeAll(async () => {
    g = await startGateway({ overrides: { gatewayApiKey: KEY, gatewayCorsOrigins: ['https://dash.example'] }, fakeAgent: true });
  });
  afterAll(async () => g?.close());

  it('refuses every endpoint without the key (401, message says missing) and changes nothing', async () => {
    const before = (await readQueueList(g.home)).pending.length;
    for (const e of ENDPOINTS) {
      const r = await g.req(e.path, { method: e.method, key: null, ...(e.body ? { json: e.body } : {}) });
      expect(r.status, `${e.method} ${e.path}`).toBe(401);
      expect(await r.json()).toEqual({ error: 'Unauthorized', message: expect.stringMatching(/missing/i) });
    }
    expect((await readQueueList(g.home)).pending.length).toBe(before);
  });

  it('refuses every endpoint with a wrong key (401, message says invalid)', async () => {
    for (const wrong of ['wrong', KEY.slice(0, -1), KEY + 'x', KEY.toUpperCase()]) {
      for (const e of ENDPOINTS) {
        const r = await g.req(e.path, { method: e.method, key: wrong, ...(e.body ? { json: e.body } : {}) });
        expect(r.status, `${e.method} ${e.path} with ${wrong}`).toBe(401);
        expect(await r.json()).toEqual({ error: 'Unauthorized', message: expect.stringMatching(/invalid/i) });
      }
    }
  });

  it('answers an upgrade request to a path without a WebSocket and closes its socket (none is left open)', async () => {
    for (const [path, key] of [
      ['/api/status', KEY],
      ['/api/status', 'wrong'],
      ['/no-such-page', KEY],
    ] as const) {
      const sock = connect(g.port, '127.0.0.1');
      let text = '';
      sock.on('data', (d: Buffer) => (text += d.toString()));
      const closed = new Promise<boolean>((resolve) => {
        sock.once('close', () => resolve(true));
        setTimeout(() => resolve(false), 5000).unref();
      });
      sock.write(
        `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n` +
          `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nX-Api-Key: ${key}\r\n\r\n`,
      );
      expect(await closed, `${path} with ${key}: the socket was left open`).toBe(true);
      expect(text).toMatch(key === KEY ? (path === '/api/status' ? /^HTTP\/1\.1 200/ : /^HTTP\/1\.1 404/) : /^HTTP\/1\.1 401/);
      sock.destroy();
    }
  });

  it('does not take the key from the query string for REST', async () => {
    const r = await g.req(`/api/status?apiKey=${KEY}`, { key: null });
    expect(r.status).toBe(401);
  });

  it('serves every endpoint with the right key', async () => {
    for (const e of ENDPOINTS) {
      const r = await g.req(e.path, { method: e.method, key: KEY, ...(e.body ? { json: e.body } : {}) });
      expect(r.status, `${e.method} ${e.path}`).toBe(e.ok);
      await r.arrayBuffer();
    }
    expect(((await (await g.req('/api/security', { key: KEY })).json()) as any).apiKeySet).toBe(true);
    expect(((await (await g.req('/api/config', { key: KEY })).json()) as any).gatewayApiKey).not.toBe(KEY);
  });

  it('answers unknown /api routes with 401 before 404 (no route discovery without the key)', async () => {
    expect((await g.req('/api/whatever', { key: null })).status).toBe(401);
    expect((await g.req('/api/whatever', { key: KEY })).status).toBe(404);
  });

  it('sends CORS headers to an allowed origin and not to another', async () => {
    const ok = await g.req('/api/status', { key: KEY, headers: { origin: 'https://dash.example' } });
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://dash.example');
    const other = await g.req('/api/status', { key: KEY, headers: { origin: 'https://evil.example' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    // The answer depends on Origin: a shared cache must keep one copy per origin.
    expect(ok.headers.get('vary')).toMatch(/origin/i);
    expect(other.headers.get('vary')).toMatch(/origin/i);
    // A 401 still carries the header for an allowed origin, so the dashboard can read it.
    const denied = await g.req('/api/status', { key: null, headers: { origin: 'https://dash.example' } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe('https://dash.example');
  });

  it('answers a CORS preflight without the key, allowing X-Api-Key and PUT', async () => {
    const pre = await g.req('/api/config/fakeAgentGreeting', {
      method: 'OPTIONS',
      key: null,
      headers: {
        origin: 'https://dash.example',
        'access-control-request-method': 'PUT',
        'access-control-request-headers': 'x-api-key,content-type',
      },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('content-length')).toBe('0');
    expect(pre.headers.get('access-control-max-age')).toBe('600');
    expect(pre.headers.get('access-control-allow-origin')).toBe('https://dash.example');
    expect(pre.headers.get('access-control-allow-methods')).toContain('PUT');
    expect(pre.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('x-api-key');
    const refused = await g.req('/api/status', {
      method: 'OPTIONS',
      key: null,
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' },
    });
    expect(refused.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('gateway without an API key', () => {
  let g: Gw;
  beforeAll(async () => {
    g = await startGateway({ fakeAgent: true });
  });
  afterAll(async () => g?.close());

  it('serves every endpoint to a loopback client without a key, and ignores a stray key', async () => {
    for (const key of [null, 'anything']) {
      for (const e of ENDPOINTS) {
        const r = await g.req(e.path, { method: e.method, key, ...(e.body ? { json: e.body } : {}) });
        expect(r.status, `${e.method} ${e.path}`).toBe(e.ok);
        await r.arrayBuffer();
      }
    }
    expect(((await (await g.req('/api/security')).json()) as any).apiKeySet).toBe(false);
  });

  it('answers local pages with Access-Control-Allow-Origin * by default (gatewayCorsOrigins ["*"]); a page from elsewhere gets 403', async () => {
    const r = await g.req('/api/status', { headers: { origin: 'http://localhost:5173' } });
    expect(r.status).toBe(200);
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    // Without a key, a loopback gateway serves this machine only (local-only.int.test.ts).
    expect((await g.req('/api/status', { headers: { origin: 'https://anywhere.example' } })).status).toBe(403);
  });
});
