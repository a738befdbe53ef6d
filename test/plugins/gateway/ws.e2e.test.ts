/**
 * The gateway WebSocket against a real kernel: real fastify on 127.0.0.1 port 0, the fake agent, a real `ws` client.
 */
import { execFile } from 'node:child_process';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_TEXT_CAP } from '../../../plugins/gateway/src/events.js';
import { WS_MAX_PAYLOAD } from '../../../plugins/gateway/src/ws.js';
import { type Client, connect, open, startGateway, type Gateway, type Msg } from './ws-helpers.js';

const clients: Client[] = [];
async function client(g: Gateway, path = '/', query: Record<string, string> = {}, headers: Record<string, string> = {}): Promise<Client> {
  const c = await open(g.url(path, query), headers);
  clients.push(c);
  return c;
}
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});

const isEvent =
  (name: string, pred: (d: any) => boolean = () => true) =>
  (m: Msg) =>
    m.type === 'event' && m.event === name && pred(m.data);

describe('gateway WebSocket (no key)', () => {
  let g: Gateway;
  beforeAll(async () => {
    g = await startGateway();
  });
  afterAll(async () => {
    await g?.close();
  });

  it('sends the status subset first, on / and on /ws', async () => {
    for (const path of ['/', '/ws']) {
      const c = await client(g, path);
      const first = await c.next(() => true, 'the first message');
      expect(first.type).toBe('status');
      expect(Object.keys(first.data).sort()).toEqual(['memory', 'model', 'running']);
      expect(first.data.running).toBe(true);
      expect(typeof first.data.model).toBe('string');
      expect(first.data.memory).toEqual({ short: 0, episodic: 0, long: 0 });
    }
  });

  it('pushTask replies with the action id, then streams queued, started, action, observation, completed in order', async () => {
    const c = await client(g);
    const task = `hello from ws ${Date.now()}`;
    const reply = await c.request('pushTask', { task, priority: 7 });
    expect(reply).toMatchObject({ type: 'reply', action: 'pushTask', ok: true });
    const id = reply.result.taskId as string;
    expect(id).toMatch(/^act_/);
    expect(reply.result.priority).toBe(7);
    expect(reply.result.message).toContain('7');
    expect(g.kernel.queue.get(id)?.source).toBe('ws');

    await c.next(
      isEvent('action.completed', (d) => d.actionId === id),
      'action.completed',
    );
    const mine = (m: Msg) =>
      m.type === 'event' &&
      (m.data.actionId === id || (m.data.skill === 'echo' && (m.data.parameters?.text === task || m.data.result === task)));
    const seq = [...c.messages.filter(mine)];
    const names = seq.map((m) => m.event);
    // Events before the completion were kept in arrival order; completion was taken out above.
    expect(names).toEqual(['action.queued', 'action.started', 'action', 'observation']);
    expect(seq[0]!.data).toMatchObject({ actionId: id, task, priority: 7, source: 'ws' });
    expect(seq[2]!.data).toMatchObject({ skill: 'echo', parameters: { text: task } });
    expect(seq[3]!.data).toMatchObject({ skill: 'echo', result: task, success: true });
  });

  it('pushTask clamps the priority and a failing task streams action.retry with a warn log event', async () => {
    const c = await client(g);
    const reply = await c.request('pushTask', { task: 'please fail now', priority: 99 });
    expect(reply.ok).toBe(true);
    expect(reply.result.priority).toBe(10);
    const id = reply.result.taskId;
    const retry = await c.next(
      isEvent('action.retry', (d) => d.actionId === id),
      'action.retry',
    );
    expect(retry.data.error).toContain('fake failure');
    expect(retry.data.retries).toBe(1);
    const log = await c.next(
      isEvent('log', (d) => d.level === 'warn' && d.message.includes(id)),
      'a warn log event',
    );
    expect(typeof log.data.timestamp).toBe('string');
  });

  it('executeSkill replies with the skill result; failures are error replies with the kernel code', async () => {
    const c = await client(g);
    const ok = await c.request('executeSkill', { skill: 'echo', parameters: { text: 'hi there' } });
    expect(ok).toMatchObject({ action: 'executeSkill', ok: true, result: { success: true, result: 'hi there' } });
    expect(typeof ok.result.executionTime).toBe('number');

    const unknown = await c.request('executeSkill', { skill: 'nope_skill', parameters: {} });
    expect(unknown).toMatchObject({ ok: false, error: { code: 'KEEL_E_SKILL_UNKNOWN' } });
    const bad = await c.request('executeSkill', { skill: 'echo', parameters: { text: 5 } });
    expect(bad).toMatchObject({ ok: false, error: { code: 'KEEL_E_SKILL_INVALID_ARGS' } });
  });

  it('caps huge texts in events (truncated: true) but not in the reply', async () => {
    const c = await client(g);
    const big = 'x'.repeat(EVENT_TEXT_CAP * 3);
    const r = await c.request('executeSkill', { skill: 'echo', parameters: { text: big } });
    expect(r.result.result).toBe(big);
    const action = await c.next(
      isEvent('action', (d) => d.skill === 'echo' && d.truncated === true),
      'the capped action event',
    );
    expect(action.data.parameters.text.length).toBeLessThanOrEqual(EVENT_TEXT_CAP + 1);
    const obs = await c.next(
      isEvent('observation', (d) => d.skill === 'echo' && d.truncated === true),
      'the capped observation',
    );
    expect(obs.data.result.length).toBeLessThanOrEqual(EVENT_TEXT_CAP + 1);
  });

  it('getStatus replies with the full agent status object', async () => {
    const c = await client(g);
    const r = await c.request('getStatus');
    expect(r.ok).toBe(true);
    expect(Object.keys(r.result).sort()).toEqual(['autonomy', 'memory', 'model', 'provider', 'queue', 'running', 'safeMode', 'version']);
    expect(r.result.version).toBe(g.kernel.version);
  });

  it('setConfig: a valid value applies (and streams config.changed), invalid and unknown are refused', async () => {
    const c = await client(g);
    const r = await c.request('setConfig', { key: 'fakeAgentGreeting', value: 'hey' });
    expect(r).toMatchObject({ ok: true, result: { status: 'applied', key: 'fakeAgentGreeting', value: 'hey' } });
    expect(g.kernel.config.get('fakeAgentGreeting')).toBe('hey');
    const ev = await c.next(
      isEvent('config.changed', (d) => d.key === 'fakeAgentGreeting'),
      'config.changed',
    );
    expect(ev.data).toMatchObject({ value: 'hey', origin: 'operator' });

    const invalid = await c.request('setConfig', { key: 'fakeAgentGreeting', value: 42 });
    expect(invalid).toMatchObject({ ok: false, error: { code: 'KEEL_E_CONFIG_INVALID_VALUE' } });
    expect(g.kernel.config.get('fakeAgentGreeting')).toBe('hey');
    const unknown = await c.request('setConfig', { key: 'noSuchKey', value: 1 });
    expect(unknown).toMatchObject({ ok: false, error: { code: 'KEEL_E_CONFIG_UNKNOWN_KEY' } });
  });

  it('setConfig masks secrets in the reply and in config.changed', async () => {
    const c = await client(g);
    const secret = 'sk-very-secret-value-123';
    const r = await c.request('setConfig', { key: 'fakeAgentApiKey', value: secret });
    expect(r.ok).toBe(true);
    expect(JSON.stringify(r)).not.toContain(secret);
    const ev = await c.next(
      isEvent('config.changed', (d) => d.key === 'fakeAgentApiKey'),
      'config.changed of the secret',
    );
    expect(JSON.stringify(ev)).not.toContain(secret);
  });

  it('setConfig of a LOCKED key from loopback is allowed as the operator', async () => {
    const c = await client(g);
    const r = await c.request('setConfig', { key: 'safeMode', value: true });
    expect(r).toMatchObject({ ok: true, result: { status: 'applied', key: 'safeMode', value: true } });
    expect(g.kernel.config.get('safeMode')).toBe(true);
    await c.request('setConfig', { key: 'safeMode', value: false });
  });

  it('malformed messages get error replies and change nothing; the connection stays usable', async () => {
    const c = await client(g);
    await c.next((m) => m.type === 'status', 'status');
    // Which actions exist, in any state: an earlier test's action may still move between pending and failed.
    const actionIds = () => {
      const l = g.kernel.queue.list();
      return [...l.pending, ...l.completed, ...l.failed].map((a) => a.id).sort();
    };
    const before = actionIds();
    const cases: Array<[string | Buffer, string]> = [
      ['not json {', 'KEEL_E_WS_BAD_JSON'],
      ['[1,2,3]', 'KEEL_E_WS_BAD_MESSAGE'],
      ['"pushTask"', 'KEEL_E_WS_BAD_MESSAGE'],
      ['null', 'KEEL_E_WS_BAD_MESSAGE'],
      ['{}', 'KEEL_E_WS_BAD_MESSAGE'],
      ['{"action": 5}', 'KEEL_E_WS_BAD_MESSAGE'],
      ['{"action": "launchMissiles", "data": {}}', 'KEEL_E_WS_UNKNOWN_ACTION'],
      ['{"action": "pushTask"}', 'KEEL_E_INVALID_INPUT'],
      ['{"action": "pushTask", "data": {}}', 'KEEL_E_INVALID_INPUT'],
      ['{"action": "pushTask", "data": {"task": ""}}', 'KEEL_E_INVALID_INPUT'],
      ['{"action": "pushTask", "data": {"task": "x", "priority": "high"}}', 'KEEL_E_INVALID_INPUT'],
      ['{"action": "pushTask", "data": {"task": "x", "extra": 1}}', 'KEEL_E_INVALID_INPUT'],
      ['{"action": "executeSkill", "data": {"skill": "echo", "parameters": [1]}}', 'KEEL_E_INVALID_INPUT'],
      ['{"action": "setConfig", "data": {"value": 1}}', 'KEEL_E_INVALID_INPUT'],
      ['{"action": "getStatus", "data": 7}', 'KEEL_E_INVALID_INPUT'],
    ];
    for (const [frame, code] of cases) {
      c.send(frame);
      const r = await c.next((m) => m.type === 'reply', `reply to ${String(frame)}`);
      expect(r.ok, String(frame)).toBe(false);
      expect(r.error.code, String(frame)).toBe(code);
      expect(typeof r.error.message).toBe('string');
    }
    const missing = await c.request('pushTask', { priority: 3 });
    expect(missing.error.message).toContain('task');
    expect(missing.action).toBe('pushTask');

    c.ws.send(Buffer.from([0, 1, 2, 3]), { binary: true });
    const bin = await c.next((m) => m.type === 'reply', 'reply to a binary frame');
    expect(bin.error.code).toBe('KEEL_E_WS_BINARY_FRAME');

    expect(actionIds()).toEqual(before);
    const status = await c.request('getStatus');
    expect(status.ok).toBe(true);
    expect(c.closed).toBeUndefined();
  });

  it('closes the connection with 1009 on a frame over the size limit', async () => {
    const c = await client(g);
    c.send(JSON.stringify({ action: 'pushTask', data: { task: 'y'.repeat(WS_MAX_PAYLOAD + 10) } }));
    const closed = await c.waitClosed('the close after an oversized frame');
    expect(closed.code).toBe(1009);
    // The server is fine: a new connection works.
    const d = await client(g);
    expect((await d.request('getStatus')).ok).toBe(true);
  });

  it('drops a client that stops reading (close 1013) instead of buffering without end; others keep going', async () => {
    const slow = await client(g);
    const fast = await client(g);
    await slow.next((m) => m.type === 'status', 'status of the slow client');
    // The slow client stops reading: the server's unsent data for it grows with every event.
    (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
    const thought = 'z'.repeat(EVENT_TEXT_CAP - 10);
    const dropped = (m: Msg) => m.type === 'event' && m.event === 'log' && /dropped a WebSocket client/.test(m.data.message);
    for (let batch = 0; batch < 200 && !fast.messages.some(dropped); batch++) {
      for (let i = 0; i < 50; i++) g.kernel.hooks.thinking.call({ thought });
      await new Promise((r) => setTimeout(r, 5));
      fast.messages.splice(0, fast.messages.length, ...fast.messages.filter(dropped));
    }
    await fast.next(dropped, 'the warn log about the dropped client', 10_000);
    (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    const closed = await slow.waitClosed('the slow client closed');
    expect([1013, 1006]).toContain(closed.code);
    expect((await fast.request('getStatus')).ok).toBe(true);
  });

  it('examples/api/ws-client.mjs pushes a task and prints its events until it completes', async () => {
    const script = join(import.meta.dirname, '..', '..', '..', 'examples', 'api', 'ws-client.mjs');
    const { stdout } = await promisify(execFile)(process.execPath, [script, 'example client task', '4'], {
      env: { ...process.env, KEEL_URL: `ws://127.0.0.1:${g.port}/` },
      timeout: 15_000,
    });
    expect(stdout).toMatch(/queued act_.*priority 4/);
    expect(stdout).toContain('action: echo {"text":"example client task"}');
    expect(stdout).toContain('action.completed');
  });

  it('refuses LOCKED keys from a non-loopback client when no key is set', async () => {
    const ip = Object.values(networkInterfaces())
      .flat()
      .find((i) => i && i.family === 'IPv4' && !i.internal)?.address;
    if (!ip) return; // no non-loopback interface on this machine
    const wide = await startGateway({}, '0.0.0.0');
    try {
      const c = await open(`ws://${ip}:${wide.port}/`);
      clients.push(c);
      const r = await c.request('setConfig', { key: 'safeMode', value: true });
      expect(r).toMatchObject({ ok: false, error: { code: 'KEEL_E_FORBIDDEN' } });
      expect(r.error.message).toContain('LOCKED');
      expect(wide.kernel.config.get('safeMode')).toBe(false);
      const safe = await c.request('setConfig', { key: 'fakeAgentGreeting', value: 'remote' });
      expect(safe.ok).toBe(true);
    } finally {
      await wide.close();
    }
  });
});

describe('gateway WebSocket auth and Origin', () => {
  let g: Gateway;
  const key = 'ws-test-key-0123456789';
  beforeAll(async () => {
    g = await startGateway({ gatewayApiKey: key, gatewayCorsOrigins: ['http://good.example'] });
  });
  afterAll(async () => {
    await g?.close();
  });

  it('refuses the upgrade with 401 without the key or with a wrong key', async () => {
    for (const path of ['/', '/ws']) {
      const none = await connect(g.url(path));
      expect(none.ok).toBe(false);
      if (!none.ok) {
        expect(none.status).toBe(401);
        expect(JSON.parse(none.body)).toMatchObject({ error: 'Unauthorized' });
        expect(JSON.parse(none.body).message).toMatch(/missing/i);
      }
      const wrong = await connect(g.url(path, { apiKey: 'wrong-key' }));
      expect(wrong.ok).toBe(false);
      if (!wrong.ok) {
        expect(wrong.status).toBe(401);
        expect(JSON.parse(wrong.body).message).toMatch(/invalid/i);
      }
    }
  });

  it('accepts the right key', async () => {
    const c = await client(g, '/', { apiKey: key });
    const first = await c.next(() => true, 'status');
    expect(first.type).toBe('status');
  });

  it("masks the gateway's own key in events (a skill result that echoes it)", async () => {
    const c = await client(g, '/', { apiKey: key });
    const r = await c.request('executeSkill', { skill: 'echo', parameters: { text: `leak ${key}` } });
    expect(r.ok).toBe(true);
    const action = await c.next(
      isEvent('action', (d) => String(d.parameters?.text).startsWith('leak ')),
      'the action event',
    );
    const obs = await c.next(
      isEvent('observation', (d) => typeof d.result === 'string' && d.result.startsWith('leak ')),
      'the observation',
    );
    expect(JSON.stringify(action)).not.toContain(key);
    expect(JSON.stringify(obs)).not.toContain(key);
    expect(obs.data.result).toContain(key.slice(0, 3));
  });

  it('checks Origin against gatewayCorsOrigins: foreign refused with 403, listed and absent accepted', async () => {
    const evil = await connect(g.url('/', { apiKey: key }), { Origin: 'http://evil.example' });
    expect(evil.ok).toBe(false);
    if (!evil.ok) {
      expect(evil.status).toBe(403);
      expect(JSON.parse(evil.body)).toMatchObject({ error: 'Forbidden' });
    }
    const evilWs = await connect(g.url('/ws', { apiKey: key }), { Origin: 'http://evil.example' });
    expect(evilWs.ok).toBe(false);

    const good = await client(g, '/', { apiKey: key }, { Origin: 'http://good.example' });
    expect((await good.next(() => true, 'status')).type).toBe('status');
    const none = await client(g, '/ws', { apiKey: key });
    expect((await none.next(() => true, 'status')).type).toBe('status');
  });

  it('a refused Origin gets no events and the kernel is unchanged', async () => {
    const before = g.kernel.queue.counts().pending;
    const evil = await connect(g.url('/', { apiKey: key }), { Origin: 'http://evil.example' });
    expect(evil.ok).toBe(false);
    expect(g.kernel.queue.counts().pending).toBe(before);
  });
});

describe('gateway WebSocket shutdown', () => {
  it("the gateway's stop closes every socket with 1001", async () => {
    const g = await startGateway();
    let closedHome = false;
    try {
      const a = await client(g);
      const b = await client(g, '/ws');
      await g.close();
      closedHome = true;
      const ca = await a.waitClosed('close of a');
      const cb = await b.waitClosed('close of b');
      expect(ca.code).toBe(1001);
      expect(cb.code).toBe(1001);
    } finally {
      if (!closedHome) await g.close();
    }
  });
});
