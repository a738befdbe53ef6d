/**
 * A bounded, deterministic fuzz of the REST API: malformed bodies, content types, headers, paths, query strings
 * and priorities. No answer may be a 5xx, every error is `{error, message}`, the process keeps serving, and
 * nothing changes (queue, configuration).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readQueueList } from '../../../kernel/queue/index.js';
import { raw, startGateway, type Gw } from './harness.js';
import { seeded } from '../../helpers.js';

const BODY_LIMIT = 4096;
let g: Gw;

beforeAll(async () => {
  g = await startGateway({ overrides: { gatewayBodyLimit: BODY_LIMIT }, fakeAgent: true });
});
afterAll(async () => g?.close());

describe('gateway fuzz', () => {
  it('survives a few hundred malformed requests without a 5xx or a state change', async () => {
    const rand = seeded(0xc0ffee);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
    const weird: unknown[] = [
      null,
      true,
      false,
      0,
      -1,
      1e308,
      -1e308,
      5.5,
      'five',
      '',
      '   ',
      [],
      [1, 2],
      {},
      { a: 1 },
      '\u0000',
      '\ud800',
      'x'.repeat(3000),
      Number.MAX_SAFE_INTEGER,
      '__proto__',
      { __proto__: { polluted: true } },
      { constructor: { prototype: { x: 1 } } },
    ];
    // Task bodies that must all be refused (no valid `task` string, or an extra field, or a bad priority type).
    const badTasks = (): unknown => {
      switch (Math.floor(rand() * 6)) {
        case 0:
          return {
            task: pick(weird.filter((w) => (typeof w !== 'string' || !String(w).trim() || w === '\u0000' ? true : false))),
            priority: pick(weird),
          };
        case 1:
          return { priority: pick(weird) };
        case 2:
          return { task: 'valid', priority: pick(['5', null, [], {}, true, 'NaN', '1e309']) };
        case 3:
          return { task: 'valid', [pick(['extra', 'id', 'status', '__proto__x', 'Priority'])]: pick(weird) };
        case 4:
          return pick(weird.filter((w) => typeof w !== 'object' || w === null || Array.isArray(w)));
        default:
          return { task: '\t \n ', priority: pick(weird) };
      }
    };
    const paths = [
      '/api/status',
      '/api/skills',
      '/api/skills/echo/execute',
      '/api/skills/%00/execute',
      '/api/skills/' + 'a'.repeat(300) + '/execute',
      '/api/tasks',
      '/api/config',
      '/api/config/safeMode',
      '/api/config/nope',
      '/api/config/%2e%2e',
      '/api/config/__proto__',
      '/api/config/constructor',
      '/api/memory',
      '/api/connections',
      '/api/logs',
      '/api/security',
      '/api/openapi.json',
      '/api/',
      '/api//tasks',
      '/API/STATUS',
      '/api/tasks/',
      '/api/memory?limit=-1',
      '/api/memory?limit=1e10',
      '/api/memory?limit=99999999999999999999',
      '/api/memory?type=vector&type=long',
      '/api/memory?search=' + '%41'.repeat(2000),
      '/api/logs?level=DEBUG',
      '/api/logs?limit=abc',
      '/api/logs?limit=0',
      '/api/logs?limit[]=1',
      '/%2e%2e/%2e%2e/etc/passwd',
      '/..%2f..%2fetc%2fpasswd',
      '/%ff%fe',
      '/api/%ff',
      '/' + 'x'.repeat(5000),
    ];
    const types = [
      'application/json',
      'application/json; charset=utf-8',
      'application/json; charset=latin1',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/xml',
      'garbage',
      '',
      'application/jsonx',
      'APPLICATION/JSON',
      'application/merge-patch+json',
    ];
    const bodies = (): string => {
      switch (Math.floor(rand() * 8)) {
        case 0:
          return JSON.stringify(badTasks());
        case 1:
          return '{"task": "unterminated';
        case 2:
          return '['.repeat(2000) + ']'.repeat(2000);
        case 3:
          return JSON.stringify({ value: pick(weird), extra: 1 });
        case 4:
          return JSON.stringify({ task: 'x'.repeat(BODY_LIMIT * 2) });
        case 5:
          return Buffer.from(Array.from({ length: 64 }, () => Math.floor(rand() * 256))).toString('latin1');
        case 6:
          return JSON.stringify({
            safeMode: pick(['yes', 1, null, [], {}]),
            adminUsers: pick(['chatA', { chatZ: ['1'] }, [1], ['nocolon'], { chatA: 'x' }]),
          });
        default:
          return '';
      }
    };

    const queueBefore = await readQueueList(g.home);
    const configBefore = JSON.stringify(g.kernel.config.all());
    let sent = 0;
    for (let i = 0; i < 320; i++) {
      const method = pick(['GET', 'POST', 'PUT', 'PUT', 'POST', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']);
      let path = pick(paths);
      // POST /api/tasks only ever gets refused bodies; PUT config/security only invalid values.
      const headers: Record<string, string> = {};
      const type = pick(types);
      if (type) headers['content-type'] = type;
      if (rand() < 0.2) headers['x-api-key'] = pick(['', 'x'.repeat(1000), '\u00ff', 'key with spaces']);
      if (rand() < 0.1)
        headers[pick(['accept', 'origin', 'x-forwarded-for', 'upgrade'])] = pick(['*/*', 'null', '1.2.3.4, 5.6.7.8', 'websocket', 'h2c']);
      let body: string | undefined;
      if (method === 'POST' || method === 'PUT' || method === 'PATCH' || rand() < 0.1) body = bodies();
      if (method === 'POST' && path === '/api/tasks' && type.toLowerCase().startsWith('application/json') && body)
        body = JSON.stringify(badTasks());
      if (method === 'PUT' && path.startsWith('/api/config/safeMode'))
        body = JSON.stringify({ value: pick(['yes', 1, null, [], {}, 'true']) });
      if (method === 'PUT' && path === '/api/security' && body && !body.includes('adminUsers'))
        body = JSON.stringify({ [pick(['bogus', 'apiKeySet', 'safemode'])]: pick(weird) });
      if (method === 'POST' && path === '/api/skills/echo/execute' && rand() < 0.3) path = '/api/skills/echo/execute?x=' + 'y'.repeat(100);
      const r = await raw(g.port, { method, path, headers, ...(body !== undefined ? { body } : {}) }).catch((e: Error) => ({
        status: -1,
        headers: {},
        body: e.message,
      }));
      sent++;
      expect(r.status, `${method} ${path.slice(0, 80)} ${type} ${String(body).slice(0, 80)} -> ${r.body}`).toBeGreaterThan(0);
      expect(r.status, `${method} ${path.slice(0, 80)} ${type} ${String(body).slice(0, 80)}`).toBeLessThan(500);
      if (r.status >= 400 && r.body && method !== 'HEAD') {
        let parsed: Record<string, unknown> = {};
        try {
          parsed = JSON.parse(r.body) as Record<string, unknown>;
        } catch {
          throw new Error(`not JSON: ${method} ${path.slice(0, 80)} -> ${r.status} ${r.body.slice(0, 200)}`);
        }
        expect(Object.keys(parsed).sort(), r.body).toEqual(['error', 'message']);
      }
    }
    expect(sent).toBe(320);

    // Oversized bodies in several shapes: 413 JSON.
    for (const size of [BODY_LIMIT + 1, BODY_LIMIT * 10, 2_000_000]) {
      const r = await raw(g.port, {
        method: 'POST',
        path: '/api/tasks',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ task: 'x'.repeat(size) }),
      });
      expect(r.status).toBe(413);
      expect(JSON.parse(r.body)).toEqual({ error: 'Payload Too Large', message: expect.stringContaining(String(BODY_LIMIT)) });
    }
    // A huge header is refused by Node itself (431), the process stays up.
    const big = await raw(g.port, { path: '/api/status', headers: { 'x-junk': 'j'.repeat(20_000) } }).catch(() => ({
      status: 431,
      headers: {},
      body: '',
    }));
    expect(big.status).toBeLessThan(500);

    const alive = await g.req('/api/status');
    expect(alive.status).toBe(200);
    const queueAfter = await readQueueList(g.home);
    expect(queueAfter.pending.map((a) => a.id)).toEqual(queueBefore.pending.map((a) => a.id));
    expect(JSON.stringify(g.kernel.config.all())).toBe(configBefore);
    expect(g.kernel.logs.recent({ level: 'error' }).filter((e) => /failed:/.test(e.message))).toEqual([]);
  });
});

describe('gateway fed bytes that are not HTTP', () => {
  it('answers 400 {error, message} and keeps serving', async () => {
    const { connect } = await import('node:net');
    for (const junk of [
      'GARBAGE\r\n\r\n',
      'GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
      'GET /api/status HTTP/9.9\r\n\r\n',
      '\u0000\u0001\u0002\r\n\r\n',
    ]) {
      const s = connect(g.port, '127.0.0.1');
      let out = '';
      s.on('data', (d: Buffer) => (out += d.toString('latin1')));
      s.on('error', () => undefined);
      s.write(junk);
      await new Promise((r) => s.on('close', r));
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(out)?.[1] ?? 0);
      expect(status, JSON.stringify(junk)).toBeGreaterThanOrEqual(400);
      expect(status, JSON.stringify(junk)).toBeLessThan(500);
      const body = out.slice(out.indexOf('\r\n\r\n') + 4);
      expect(Object.keys(JSON.parse(body) as object).sort()).toEqual(['error', 'message']);
    }
    expect((await g.req('/api/status')).status).toBe(200);
  });
});
