/**
 * A gateway without a key and a browser or a reverse proxy in between (CWE-290, "localhost drive-by"):
 * - on loopback it serves this machine only: a request a same-host reverse proxy forwarded (SPEC has TLS
 *   terminated by one), one addressed to another host name (DNS rebinding) or sent by a web page from elsewhere
 *   gets 403 and changes nothing; local pages and clients are served;
 * - beyond loopback, a web page of another origin that gatewayCorsOrigins does not list by name gets 403 (any
 *   site the user visits could otherwise drive the agent through the browser); its own pages, listed origins and
 *   non-browser clients are served; a proxied request is served but never counts as local (LOCKED and security
 *   settings refuse it), and the operator is told once;
 * - with a key, the key decides (covered in auth.int.test.ts).
 */
import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readQueueList } from '../../../kernel/queue/index.js';
import { raw, startGateway, type Gw } from './harness.js';
import { connect } from './ws-helpers.js';

const json = (body: unknown) => ({ body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

describe('gateway without a key on loopback: this machine only', () => {
  let g: Gw;
  beforeAll(async () => {
    g = await startGateway({ fakeAgent: true });
  });
  afterAll(async () => g?.close());

  it('refuses what a proxy forwarded, what names another host, and what a page from elsewhere sent; changes nothing', async () => {
    const before = (await readQueueList(g.home)).pending.length;
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ 'x-forwarded-for': '203.0.113.9' }, /a proxy forwarded it \(x-forwarded-for header\)/],
      [{ forwarded: 'for=203.0.113.9;proto=https' }, /forwarded header/],
      [{ 'x-real-ip': '203.0.113.9' }, /x-real-ip header/],
      [{ via: '1.1 caddy' }, /via header/],
      [{ host: `rebind.example:${g.port}` }, /addressed to rebind\.example/],
      [{ host: `0.0.0.0:${g.port}` }, /addressed to 0\.0\.0\.0/],
      [{ origin: 'https://anywhere.example' }, /a web page at https:\/\/anywhere\.example sent it/],
      [{ origin: 'null' }, /a web page at null sent it/],
    ];
    for (const [headers, why] of cases) {
      for (const [method, path, body] of [
        ['GET', '/api/status', undefined],
        ['POST', '/api/tasks', { task: 'from a page elsewhere' }],
        ['GET', '/', undefined],
      ] as const) {
        const b = body ? json(body) : undefined;
        const r = await raw(g.port, { method, path, headers: { ...b?.headers, ...headers }, ...(b ? { body: b.body } : {}) });
        expect(r.status, `${method} ${path} ${JSON.stringify(headers)}`).toBe(403);
        const parsed = JSON.parse(r.body);
        expect(parsed.error).toBe('Forbidden');
        expect(parsed.message).toMatch(/serves this machine only/);
        expect(parsed.message).toMatch(why);
        expect(parsed.message).toMatch(/Set gatewayApiKey/);
        expect(r.headers['access-control-allow-origin']).toBeUndefined();
      }
    }
    // A preflight from elsewhere is refused too, so the browser never sends the request.
    const pre = await raw(g.port, {
      method: 'OPTIONS',
      path: '/api/tasks',
      headers: { origin: 'https://anywhere.example', 'access-control-request-method': 'POST' },
    });
    expect(pre.status).toBe(403);
    expect((await readQueueList(g.home)).pending.length).toBe(before);
  });

  it('refuses a WebSocket from a page elsewhere or through a proxy', async () => {
    for (const headers of [{ Origin: 'https://anywhere.example' }, { 'X-Forwarded-For': '203.0.113.9' }]) {
      const up = await connect(`ws://127.0.0.1:${g.port}/ws`, headers);
      expect(up.ok, JSON.stringify(headers)).toBe(false);
      if (!up.ok) expect(up.status).toBe(403);
    }
  });

  it('serves local pages and clients: no Origin, localhost and 127.0.0.1 origins and names', async () => {
    for (const headers of [
      {},
      { origin: `http://127.0.0.1:${g.port}` },
      { origin: `http://localhost:${g.port}` },
      { origin: 'http://localhost:5173' },
      { host: `localhost:${g.port}` },
      { host: `keel.localhost:${g.port}` },
      { host: `[::1]:${g.port}` },
      // This machine's own name (Debian maps it to 127.0.1.1).
      { host: `${hostname()}:${g.port}` },
    ]) {
      const r = await raw(g.port, { path: '/api/status', headers });
      expect(r.status, JSON.stringify(headers)).toBe(200);
    }
    const ws = await connect(`ws://127.0.0.1:${g.port}/ws`, { Origin: `http://localhost:${g.port}` });
    expect(ws.ok).toBe(true);
    if (ws.ok) ws.client.close();
  });
});

describe('gateway without a key beyond loopback', () => {
  let open: Gw;
  let listed: Gw;
  beforeAll(async () => {
    open = await startGateway({ overrides: { gatewayHost: '0.0.0.0' }, fakeAgent: true });
    listed = await startGateway({ overrides: { gatewayHost: '0.0.0.0', gatewayCorsOrigins: ['https://dash.example'] }, fakeAgent: true });
  });
  afterAll(async () => {
    await open?.close();
    await listed?.close();
  });

  it('refuses a web page of another origin (403, nothing changes) and serves its own pages, listed origins and plain clients', async () => {
    const before = (await readQueueList(open.home)).pending.length;
    const b = json({ task: 'drive-by' });
    const evil = await raw(open.port, {
      method: 'POST',
      path: '/api/tasks',
      headers: { ...b.headers, origin: 'https://evil.example' },
      body: b.body,
    });
    expect(evil.status).toBe(403);
    expect(JSON.parse(evil.body).message).toMatch(/A web page at https:\/\/evil\.example may not call this gateway.*gatewayCorsOrigins/);
    expect((await readQueueList(open.home)).pending.length).toBe(before);
    // Its own dashboard, reached under whatever name: same origin as the Host it asked for.
    const own = await raw(open.port, {
      path: '/api/status',
      headers: { host: `192.0.2.7:${open.port}`, origin: `http://192.0.2.7:${open.port}` },
    });
    expect(own.status).toBe(200);
    expect((await raw(open.port, { path: '/api/status' })).status).toBe(200);
    expect((await raw(listed.port, { path: '/api/status', headers: { origin: 'https://dash.example' } })).status).toBe(200);
    expect((await raw(listed.port, { path: '/api/status', headers: { origin: 'https://evil.example' } })).status).toBe(403);
  });

  it('serves a proxied request but never as local: LOCKED and security settings refuse it; the operator is told once', async () => {
    const proxied = { 'x-forwarded-for': '203.0.113.9', 'content-type': 'application/json' };
    expect((await raw(open.port, { path: '/api/status', headers: proxied })).status).toBe(200);
    const locked = await raw(open.port, {
      method: 'PUT',
      path: '/api/config/safeMode',
      headers: proxied,
      body: JSON.stringify({ value: true }),
    });
    expect(locked.status).toBe(403);
    expect(JSON.parse(locked.body).message).toMatch(/LOCKED/);
    const sec = await raw(open.port, { method: 'PUT', path: '/api/security', headers: proxied, body: JSON.stringify({ safeMode: true }) });
    expect(sec.status).toBe(403);
    expect(open.kernel.config.get('safeMode')).toBe(false);
    // The same change straight from this machine is allowed.
    const local = await raw(open.port, {
      method: 'PUT',
      path: '/api/config/safeMode',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ value: true }),
    });
    expect(local.status).toBe(200);
    const warnings = open.kernel.logs
      .recent({ level: 'warn' })
      .map((e) => e.message)
      .filter((m) => /reverse proxy/.test(m));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/no gatewayApiKey.*Set gatewayApiKey/);
  });
});
