/**
 * The resumable event stream: every event carries a monotonic seq; a client reconnecting with ?since=<seq> gets what
 * it missed from the buffer, or one `gap` message when the buffer no longer reaches back (or the gateway restarted).
 * Also the subprotocol key (a browser's way to authenticate without the key in a URL).
 */
import { describe, expect, it, afterAll, beforeAll } from 'vitest';
import { createBareBus } from '../../../plugins/gateway/src/events.js';
import { createEventStream } from '../../../plugins/gateway/src/stream.js';
import WebSocket from 'ws';
import { open, startGateway, type Gateway, type Msg } from './ws-helpers.js';

describe('event stream buffer', () => {
  it('stamps increasing seqs, replays after since, and answers gap beyond the buffer, from the future or across a restart', () => {
    const bus = createBareBus();
    const s = createEventStream(bus, { size: 5, start: 100 });
    for (let i = 0; i < 8; i++) bus.emit('x', { i });
    expect(s.last()).toBe(107);
    const r = s.replay(104);
    expect(r.kind).toBe('frames');
    const frames = r.kind === 'frames' ? r.frames.map((f) => JSON.parse(f.text)) : [];
    expect(frames.map((f) => f.seq)).toEqual([105, 106, 107]);
    expect(frames[0]).toEqual({ type: 'event', seq: 105, event: 'x', data: { i: 5 } });
    expect(s.replay(102)).toMatchObject({ kind: 'frames' }); // the oldest kept is 103: since 102 misses nothing lost
    expect(s.replay(101).kind).toBe('gap');
    expect(s.replay(107)).toEqual({ kind: 'frames', frames: [] });
    expect(s.replay(500).kind).toBe('gap');
    // A restarted gateway starts from its own start time: an old since is older than its buffer.
    const restarted = createEventStream(createBareBus(), { size: 5, start: 1000 });
    const gap = restarted.replay(107);
    expect(gap.kind).toBe('gap');
    expect(JSON.parse((gap as { text: string }).text)).toMatchObject({ type: 'gap', since: 107, seq: 999 });
  });
});

describe('gateway WebSocket resume', () => {
  let g: Gateway;
  beforeAll(async () => {
    g = await startGateway();
  });
  afterAll(async () => {
    await g?.close();
  });

  it('a client that reconnects with ?since gets the events it missed, in order, without a reload', async () => {
    const a = await open(g.url());
    const status = await a.next((m) => m.type === 'status', 'status');
    expect(Number.isInteger(status.seq)).toBe(true);
    const first = await a.request('pushTask', { task: 'before the drop' });
    const done = await a.next(
      (m) => m.type === 'event' && m.event === 'action.completed' && m.data.actionId === first.result.taskId,
      'first completion',
    );
    expect(done.seq).toBeGreaterThan(status.seq);
    const seqs = a.messages.filter((m) => m.type === 'event').map((m) => m.seq as number);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBeGreaterThan(seqs[i - 1]!);
    const lastSeen = done.seq as number;
    a.close();

    // While disconnected, another task runs to completion.
    const b = await open(g.url());
    const missedTask = await b.request('pushTask', { task: 'while the first client was away' });
    await b.next(
      (m) => m.type === 'event' && m.event === 'action.completed' && m.data.actionId === missedTask.result.taskId,
      'second completion',
    );
    b.close();

    const again = await open(g.url('/', { since: String(lastSeen) }));
    await again.next((m) => m.type === 'status', 'status on reconnect');
    const completed = await again.next(
      (m) => m.type === 'event' && m.event === 'action.completed' && m.data.actionId === missedTask.result.taskId,
      'the missed completion, replayed',
    );
    const replayed = again.messages.filter((m: Msg) => m.type === 'event');
    expect(replayed.every((m) => m.seq > lastSeen && m.seq < completed.seq)).toBe(true);
    expect(replayed.map((m) => m.event)).toContain('action.queued');
    expect(again.messages.some((m) => m.type === 'gap')).toBe(false);
    again.close();
  });

  it('a since older than the buffer (or from another gateway run) gets one gap message', async () => {
    const c = await open(g.url('/', { since: '5' }));
    await c.next((m) => m.type === 'status', 'status');
    const gap = await c.next((m) => m.type === 'gap', 'the gap message');
    expect(gap).toMatchObject({ type: 'gap', since: 5 });
    expect(gap.message).toMatch(/refetch/);
    c.close();
  });
});

describe('WebSocket key as a subprotocol', () => {
  let g: Gateway;
  const KEY = 'ws-subprotocol-key-0123';
  beforeAll(async () => {
    g = await startGateway({ gatewayApiKey: KEY });
  });
  afterAll(async () => {
    await g?.close();
  });

  it('accepts keel-key.<base64url key> next to keel.v1 and selects keel.v1; a wrong one is 401', async () => {
    const dial = (key: string) =>
      new Promise<{ ok: true; ws: WebSocket } | { ok: false; status: number }>((resolve, reject) => {
        const ws = new WebSocket(g.url(), ['keel.v1', `keel-key.${Buffer.from(key).toString('base64url')}`]);
        ws.once('open', () => resolve({ ok: true, ws }));
        ws.once('unexpected-response', (_req, res) => {
          resolve({ ok: false, status: res.statusCode ?? 0 });
          ws.terminate();
        });
        ws.once('error', (e) => reject(e));
      });
    const good = await dial(KEY);
    expect(good.ok).toBe(true);
    if (good.ok) {
      expect(good.ws.protocol).toBe('keel.v1');
      good.ws.terminate();
    }
    expect(await dial('nope')).toEqual({ ok: false, status: 401 });
  });
});
