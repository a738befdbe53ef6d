/**
 * The abort signal extension routes get: aborted when the client goes away before the answer, never merely
 * because the request's body has been read (a POST with a body used to arrive already aborted).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor, writePlugin } from '../../helpers.js';
import { type Gw, startGateway } from './harness.js';

const KEY = 'signal-test-key-0123456789';

describe('gateway: the abort signal of extension routes', () => {
  let g: Gw;
  beforeAll(async () => {
    g = await startGateway({
      key: KEY,
      overrides: { gatewayApiKey: KEY },
      before: (home) =>
        writePlugin(join(home, 'plugins'), {
          id: 'sig',
          manifest: { kind: 'service', provides: ['gateway:routes:sig'] },
          setup: `
            const seen = [];
            const wait = (signal, ms) => new Promise((r) => { const t = setTimeout(r, ms); signal.addEventListener('abort', () => { clearTimeout(t); r(); }, { once: true }); });
            ctx.provide('gateway:routes:sig', { routes: [
              { method: 'POST', url: '/v1/handler', summary: 'h', schema: { response: {} },
                handler: async ({ signal }) => { await wait(signal, 150); return { body: { aborted: signal.aborted } }; } },
              { method: 'POST', url: '/v1/stream', summary: 's', schema: { response: {} },
                stream: async ({ signal, res }) => { await wait(signal, Number(150)); res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify({ aborted: signal.aborted })); } },
              { method: 'POST', url: '/v1/long', summary: 'l', schema: { response: {} },
                stream: async ({ signal, res }) => { res.writeHead(200, { 'content-type': 'text/event-stream' }); res.write(': hi\\n\\n'); await wait(signal, 20000); seen.push(signal.aborted); res.end(); } },
              { method: 'GET', url: '/v1/seen', summary: 'seen', schema: { response: {} }, handler: () => ({ body: { seen } }) },
            ] });
          `,
        }),
    });
  });
  afterAll(() => g?.close());

  it('is not aborted while the client waits for the answer to a POST with a body', async () => {
    for (const path of ['/v1/handler', '/v1/stream']) {
      const r = await g.req(path, { key: KEY, method: 'POST', json: { some: 'body' } });
      expect(await r.json(), path).toEqual({ aborted: false });
    }
  });

  it('is aborted when the client goes away before the answer', async () => {
    const ac = new AbortController();
    const r = await g.req('/v1/long', { key: KEY, method: 'POST', json: { a: 1 }, signal: ac.signal });
    const reader = r.body!.getReader();
    await reader.read();
    ac.abort();
    await reader.cancel().catch(() => undefined);
    const seen = await waitFor(async () => {
      const s = ((await (await g.req('/v1/seen', { key: KEY })).json()) as { seen: boolean[] }).seen;
      return s.length ? s : undefined;
    }, 'the route to see the abort');
    expect(seen).toEqual([true]);
  });
});
