/**
 * Protocol endpoints other plugins add outside /api (an OpenAI-compatible /v1, MCP's /mcp): the key applies to them
 * exactly as under /api, whatever the spelling of the path; protocol clients may send it as `Authorization: Bearer`;
 * a `stream` route writes its own answer with the gateway's CORS headers on it.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writePlugin } from '../../helpers.js';
import { type Gw, raw, startGateway } from './harness.js';

const KEY = 'protocol-test-key-0123456789';

describe('gateway: extension routes under /v1 and /mcp', () => {
  let g: Gw;
  beforeAll(async () => {
    g = await startGateway({
      key: KEY,
      overrides: { gatewayApiKey: KEY, gatewayCorsOrigins: ['*'] },
      // The built-in OpenAI endpoint serves GET /v1/models itself: kept out, the test plugin's route is the one.
      deny: ['openai-api', 'mcp'],
      before: (home) =>
        writePlugin(join(home, 'plugins'), {
          id: 'proto',
          manifest: { kind: 'service', provides: ['gateway:routes:proto'] },
          setup: `
            let calls = 0;
            ctx.provide('gateway:routes:proto', { routes: [
              { method: 'GET', url: '/v1/models', summary: 'models', schema: { response: {} },
                handler: ({ caller, headers }) => { calls++; return { body: { object: 'list', calls, operator: caller.operator, sawKey: 'authorization' in headers || 'x-api-key' in headers } }; } },
              { method: 'POST', url: '/mcp', summary: 'mcp', schema: { response: {} },
                stream: async ({ body, res }) => {
                  calls++;
                  res.writeHead(200, { 'content-type': 'text/event-stream' });
                  res.write('data: ' + JSON.stringify({ got: body }) + '\\n\\n');
                  res.end();
                } },
              { method: 'GET', url: '/outside/thing', summary: 'not allowed here', schema: { response: {} },
                handler: () => ({ body: { reached: true } }) },
            ] });
          `,
        }),
    });
  });
  afterAll(() => g?.close());

  it('needs the key, and takes it as Authorization: Bearer', async () => {
    const none = await g.req('/v1/models', { key: null });
    expect(none.status).toBe(401);
    const bearer = await g.req('/v1/models', { key: null, headers: { authorization: `Bearer ${KEY}` } });
    expect(bearer.status).toBe(200);
    const body = (await bearer.json()) as { object: string; operator: boolean; sawKey: boolean };
    expect(body).toMatchObject({ object: 'list', operator: true, sawKey: false });
    const wrong = await g.req('/v1/models', { key: null, headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    const header = await g.req('/v1/models', { key: KEY });
    expect(header.status).toBe(200);
  });

  it('no spelling of /v1 or /mcp reaches the handler without the key', async () => {
    const before = ((await (await g.req('/v1/models', { key: KEY })).json()) as { calls: number }).calls;
    for (const path of ['/%76%31/models', '/v%31/models', '//v1/models', '/./v1/models', '/x/../v1/models', '/V1/models']) {
      const r = await raw(g.port, { path });
      expect(r.status, path).not.toBe(200);
    }
    for (const path of ['/%6dcp', '/mc%70', '//mcp']) {
      const r = await raw(g.port, { method: 'POST', path, headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(r.status, path).not.toBe(200);
    }
    const after = ((await (await g.req('/v1/models', { key: KEY })).json()) as { calls: number }).calls;
    expect(after).toBe(before + 1);
  });

  it('a stream route writes its own answer, with CORS headers', async () => {
    const r = await g.req('/mcp', { key: KEY, method: 'POST', json: { jsonrpc: '2.0', id: 1, method: 'ping' } });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/event-stream');
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    expect(r.headers.get('access-control-expose-headers')).toContain('Mcp-Session-Id');
    expect(await r.text()).toBe(`data: ${JSON.stringify({ got: { jsonrpc: '2.0', id: 1, method: 'ping' } })}\n\n`);
  });

  it('an extension cannot serve outside /api, /v1 and /mcp', async () => {
    const r = await g.req('/outside/thing', { key: KEY });
    expect(r.status).toBe(404);
  });

  it('a preflight allows the headers protocol clients send', async () => {
    const r = await g.req('/v1/models', {
      key: null,
      method: 'OPTIONS',
      headers: { origin: 'https://ui.example', 'access-control-request-method': 'POST' },
    });
    expect(r.status).toBe(204);
    const allowed = (r.headers.get('access-control-allow-headers') ?? '').toLowerCase();
    for (const h of ['authorization', 'mcp-session-id', 'idempotency-key', 'x-keel-conversation', 'x-stainless-retry-count'])
      expect(allowed).toContain(h);
  });
});
