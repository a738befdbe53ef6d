/**
 * Issue 35.1: no spelling of an /api path reaches an API handler without the key. The attack, for real: raw HTTP
 * requests (fetch would normalise `/./` and `..` away) whose path the router decodes to an /api route, without a
 * key, against a gateway with one. Before the fix `/%61pi/tasks` queued an action and `/%61pi/config/...` changed a
 * LOCKED key.
 */
import { request } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readQueueList } from '../../../kernel/queue/index.js';
import { startGateway, type Gw } from './harness.js';

const KEY = 'correct-horse-battery-staple';

/** One raw HTTP request: the path goes on the wire exactly as written. */
function raw(port: number, method: string, path: string, body?: unknown, key?: string): Promise<{ status: number; text: string }> {
  const data = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: {
          ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}),
          ...(key ? { 'x-api-key': key } : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          text += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** Ways to write `/api` that a router or a proxy might read as `/api`. */
const SPELLINGS = [
  '/%61pi',
  '/ap%69',
  '/%61%70%69',
  '/%2561pi',
  '/API',
  '/Api',
  '//api',
  '/./api',
  '/x/../api',
  '/api/.',
  '/%2e/api',
  '/%2e%2e/api',
];

const ATTACKS: Array<{ method: string; rest: string; body?: unknown }> = [
  { method: 'POST', rest: '/tasks', body: { task: 'queued without the key' } },
  { method: 'PUT', rest: '/config/commandAllowList', body: { value: ['bash'] } },
  { method: 'POST', rest: '/skills/echo/execute', body: { parameters: { text: 'ran without the key' } } },
  { method: 'GET', rest: '/config' },
  { method: 'GET', rest: '/memory' },
  { method: 'PUT', rest: '/security', body: { safeMode: false } },
];

describe('gateway with a key: percent-encoded and otherwise respelled /api paths', () => {
  let g: Gw;
  beforeAll(async () => {
    g = await startGateway({ overrides: { gatewayApiKey: KEY, gatewayCorsOrigins: ['*'] }, fakeAgent: true });
  });
  afterAll(async () => g?.close());

  it('no spelling reaches an API handler without the key, and nothing changes', async () => {
    const before = (await readQueueList(g.home)).pending.length;
    const configBefore = readFileSync(join(g.home, 'keel.config.yaml'), 'utf8');
    const reached: string[] = [];
    for (const s of SPELLINGS) {
      for (const a of ATTACKS) {
        const r = await raw(g.port, a.method, `${s}${a.rest}`, a.body);
        // A refusal is a 401 (the key) or a 404 (a path that is no route); never a handler's answer.
        if (r.status !== 401 && r.status !== 404 && r.status !== 400)
          reached.push(`${a.method} ${s}${a.rest} -> ${r.status} ${r.text.slice(0, 80)}`);
        if (r.status === 401) expect(JSON.parse(r.text)).toEqual({ error: 'Unauthorized', message: expect.stringMatching(/missing/i) });
      }
    }
    expect(reached).toEqual([]);
    expect((await readQueueList(g.home)).pending.length).toBe(before);
    expect(readFileSync(join(g.home, 'keel.config.yaml'), 'utf8')).toBe(configBefore);
  });

  it('a respelled path that reaches an API route asks for the key (401), and works with it', async () => {
    const no = await raw(g.port, 'GET', '/%61pi/status');
    expect(no.status).toBe(401);
    const yes = await raw(g.port, 'GET', '/%61pi/status', undefined, KEY);
    expect(yes.status).toBe(200);
    expect(JSON.parse(yes.text)).toHaveProperty('running');
  });

  it('the plain /api behaviour is unchanged: 401 without the key, 200 with it; the page stays public', async () => {
    expect((await raw(g.port, 'GET', '/api/status')).status).toBe(401);
    expect((await raw(g.port, 'GET', '/api/status', undefined, KEY)).status).toBe(200);
    expect((await raw(g.port, 'GET', '/api/no-such-route')).status).toBe(401);
    const page = await raw(g.port, 'GET', '/');
    expect([200, 404]).toContain(page.status);
    expect(page.status === 401).toBe(false);
  });
});
