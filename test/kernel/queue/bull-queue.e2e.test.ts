/**
 * The shared queue on BullMQ (queueRedisUrl) against a real redis-server on 127.0.0.1: several runners share one
 * queue; claims are unambiguous; a dead runner's actions come back and its late result is refused; a chat's
 * actions stay on their runner and move, in order, when it is gone; a stop reaches the runner wherever it is; a
 * finished action is never run again; retried pushes and redelivered messages are one action; Redis restarts lose
 * nothing acknowledged; job data is signed; the earlier stream queue is moved over once.
 */
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../../kernel/errors.js';
import { BullQueue } from '../../../kernel/queue/bull-queue.js';
import { waitFor } from '../../helpers.js';
import { privateRedis, redisProblem, type SharedRedis, sharedRedis, type TestRedis } from '../../redis-server.js';
import { type CapturedLog, captureLog } from './helpers.js';

const problem = redisProblem();
const server = sharedRedis();
let redis: SharedRedis | TestRedis;
let admin: Redis;
let prefix: string;
let n = 0;
const open: BullQueue[] = [];

beforeAll(async () => {
  if (problem) return;
  redis = server();
  admin = server().admin();
});

afterEach(async () => {
  for (const q of open.splice(0)) await q.close().catch(() => {});
});

function newPrefix(): string {
  prefix = `b${++n}-${server().prefix}`;
  return prefix;
}

interface Opened {
  q: BullQueue;
  log: CapturedLog;
}

async function runner(opts: { owner?: boolean; leaseMs?: number; signingKey?: string; readOnly?: boolean } = {}): Promise<Opened> {
  const log = captureLog();
  const q = await BullQueue.open({
    url: redis.url,
    prefix,
    owner: opts.owner ?? true,
    log,
    leaseMs: opts.leaseMs ?? 1000,
    ...(opts.signingKey ? { signingKey: opts.signingKey } : {}),
    ...(opts.readOnly ? { readOnly: true } : {}),
  });
  open.push(q);
  return { q, log };
}

/** kill -9: no close, no release of the lease or of the held actions. */
function kill(r: Opened): void {
  r.q.crash();
  open.splice(open.indexOf(r.q), 1);
}

/** Takes until one comes (the push may still be on its way). */
const takeSoon = (q: BullQueue | (() => ReturnType<BullQueue['take']>), what: string, ms = 10_000) =>
  waitFor(() => (typeof q === 'function' ? q() : q.take()), what, ms);

describe.skipIf(problem)('shared queue on BullMQ', () => {
  it('a push on one machine is seen by the others, in priority order, and by a fresh reader', async () => {
    newPrefix();
    const a = await runner({ owner: false });
    const b = await runner();
    await a.q.push({ task: 'low', priority: 2 });
    await a.q.push({ task: 'high', priority: 9 });
    await waitFor(() => b.q.list().pending.length === 2, 'the other runner to see both pushes');
    expect(b.q.list().pending.map((x) => x.task)).toEqual(['high', 'low']);
    await waitFor(() => b.q.counts().pending === 2, 'the counts');
    const c = await runner({ readOnly: true });
    expect(c.q.list().pending.map((x) => x.task)).toEqual(['high', 'low']);
    expect(c.q.counts()).toMatchObject({ pending: 2, executing: 0 });
    expect((await b.q.take())?.task).toBe('high');
  });

  it("a runner's starts and settles reach the other views in batches, the newest per action, not one message each", async () => {
    newPrefix();
    const feeder = await runner({ owner: false });
    const watcher = await runner({ owner: false });
    const b = await runner();
    const listen = admin.duplicate();
    const messages: string[] = [];
    listen.on('message', (_ch, m: string) => messages.push(m));
    await listen.subscribe(`${prefix}q:events`);
    try {
      for (let i = 0; i < 50; i++) await feeder.q.push({ task: `t${i}` });
      await waitFor(() => b.q.counts().pending === 50 || undefined, 'the runner to see the pushes');
      messages.length = 0;
      for (let i = 0; i < 50; i++) {
        const a = await takeSoon(b.q, 'an action');
        await b.q.complete(a.id, `r${a.task}`);
      }
      await waitFor(() => watcher.q.list().completed.length === 50 || undefined, 'the watcher to see every completion');
      expect(watcher.q.list().pending).toEqual([]);
      expect(watcher.q.get(watcher.q.list().completed[0]!.id)?.result).toMatch(/^rt\d+$/);
      // 50 starts and 50 settles, coalesced: far fewer messages than events, and each action's start dropped for its settle.
      expect(messages.length).toBeLessThan(20);
      const events = messages.flatMap((m) => JSON.parse(m) as Array<{ k: string }>);
      expect(events.filter((e) => e.k === 'settle')).toHaveLength(50);
      expect(events.filter((e) => e.k === 'start').length).toBeLessThan(10);
    } finally {
      listen.disconnect();
    }
  });

  it('three runners taking at once: every action is taken exactly once, each result recorded', async () => {
    newPrefix();
    const rs = await Promise.all([runner(), runner(), runner()]);
    const total = 90;
    for (let i = 0; i < total; i++) await rs[i % 3]!.q.push({ task: `t${i}` });
    const taken = new Map<string, number>();
    await Promise.all(
      rs.map(async (r, i) => {
        for (let a = await r.q.take(); a; a = await r.q.take()) {
          expect(taken.has(a.id), `${a.id} taken twice`).toBe(false);
          taken.set(a.id, i);
          await r.q.complete(a.id, `by ${i}`);
        }
      }),
    );
    expect(taken.size).toBe(total);
    expect(new Set(taken.values()).size).toBeGreaterThan(1);
    const viewer = await runner({ readOnly: true });
    const byId = new Map(viewer.q.list().completed.map((x) => [x.id, x.result]));
    expect(byId.size).toBe(total);
    for (const [id, who] of taken) expect(byId.get(id)).toBe(`by ${who}`);
  });

  it('a stop from another machine reaches the runner holding the action; a stopped action whose runner dies is not run again', async () => {
    newPrefix();
    const a = await runner({ leaseMs: 600 });
    const b = await runner({ leaseMs: 600 });
    const viewer = await runner({ owner: false });
    const one = await viewer.q.push({ task: 'stop me' });
    expect((await takeSoon(a.q, 'a to take it')).id).toBe(one.id);
    const heard: string[] = [];
    a.q.onStop((id, reason) => heard.push(`${id}: ${reason}`));
    expect(await viewer.q.stop(one.id, 'stopped on the dashboard of another machine')).toBe(true);
    expect(await viewer.q.stop(one.id, 'twice')).toBe(false);
    await waitFor(() => heard.includes(`${one.id}: stopped on the dashboard of another machine`), 'the runner holding it to hear the stop');
    expect(await a.q.fail(one.id, 'stopped on the dashboard of another machine')).toBe('failed');
    await waitFor(() => viewer.q.get(one.id)?.status === 'failed', 'the viewer to see it failed');
    expect(viewer.q.get(one.id)?.metadata.retries).toBe(0);

    // Stopped, then its runner is killed before it could abort: the takeover fails it instead of running it.
    const two = await viewer.q.push({ task: 'stop me too' });
    expect((await takeSoon(a.q, 'a to take the second')).id).toBe(two.id);
    kill(a);
    expect(await viewer.q.stop(two.id, 'runaway')).toBe(true);
    await waitFor(async () => (await b.q.take(), (await b.q.fetch(two.id))?.status === 'failed'), "b's takeover to fail it", 15_000);
    expect(await b.q.fetch(two.id)).toMatchObject({ status: 'failed', error: 'runaway' });
  });

  it("a killed runner's action goes back after its lease and runs elsewhere; the killed one's late result is refused", async () => {
    newPrefix();
    const a = await runner({ leaseMs: 600 });
    const b = await runner({ leaseMs: 600 });
    const pushed = await a.q.push({ task: 'survive me' });
    expect((await a.q.take())?.id).toBe(pushed.id);
    expect(await b.q.take()).toBeUndefined();
    kill(a);
    const again = await takeSoon(b.q, 'b to take it over', 15_000);
    expect(again.id).toBe(pushed.id);
    expect(b.log.text('warn')).toMatch(/was running on a runner that is gone; it runs again here/);
    await b.q.complete(pushed.id, 'fresh');
    expect(b.q.get(pushed.id)?.result).toBe('fresh');
    expect((await b.q.fetch(pushed.id))?.result).toBe('fresh');
  });

  it('a runner that was paused past its lease cannot settle the action another runner took over', async () => {
    newPrefix();
    const a = await runner({ leaseMs: 600 });
    const b = await runner({ leaseMs: 600 });
    const pushed = await a.q.push({ task: 'paused runner' });
    await a.q.take();
    // As if a were paused: its renewals stop, its lease and its hold lapse.
    for (const t of (a.q as unknown as { timers: NodeJS.Timeout[] }).timers) clearInterval(t);
    await admin.del(`${prefix}queue:worker:${a.q.worker}`);
    const taken = await takeSoon(b.q, 'b to take it over', 15_000);
    expect(taken.id).toBe(pushed.id);
    await expect(a.q.complete(pushed.id, 'late')).rejects.toMatchObject({ code: ErrorCodes.ACTION_NOT_EXECUTING });
    await b.q.complete(pushed.id, 'b did it');
    expect((await a.q.fetch(pushed.id))?.result).toBe('b did it');
  });

  it('an action that finished but whose record was lost is completed from its done mark, not run again', async () => {
    newPrefix();
    const a = await runner({ leaseMs: 600 });
    const b = await runner({ leaseMs: 600 });
    const pushed = await a.q.push({ task: 'append a line once' });
    await a.q.take();
    // a finished it and wrote its done mark; the move to completed never reached Redis (a died right then).
    await admin.set(`${prefix}q:done:${pushed.id}`, 'the answer', 'EX', 60);
    kill(a);
    await waitFor(
      async () => (await b.q.take(), (await b.q.fetch(pushed.id))?.status === 'completed'),
      'the takeover to settle it',
      15_000,
    );
    expect(await b.q.fetch(pushed.id)).toMatchObject({ status: 'completed', result: 'the answer' });
    expect(b.log.text('info')).toMatch(/completed from its done mark, not run again/);
  });

  it("a chat's actions stay on the runner that received them, and move in order to one other runner when it is gone", async () => {
    newPrefix();
    const a = await runner({ leaseMs: 600 });
    const b = await runner({ leaseMs: 600 });
    const c = await runner({ leaseMs: 600 });
    const chat = (i: number) => ({ task: `chat ${i}`, source: 'chatA', metadata: { originWorker: a.q.worker! } });
    for (let i = 0; i < 4; i++) await a.q.push(chat(i));
    expect(await b.q.take()).toBeUndefined();
    expect(await c.q.take()).toBeUndefined();
    const first = await a.q.take();
    expect(first?.task).toBe('chat 0');
    await a.q.complete(first!.id, 'ok');
    kill(a);
    // One of b and c adopts a's conversations; the other never sees them.
    const got: Array<{ who: string; task: string }> = [];
    await waitFor(
      async () => {
        for (const [who, r] of [
          ['b', b],
          ['c', c],
        ] as const) {
          const x = await r.q.take();
          if (x) {
            got.push({ who, task: x.task });
            await r.q.complete(x.id, 'ok');
          }
        }
        return got.length === 3;
      },
      "a's conversations to move",
      15_000,
    );
    expect(got.map((g) => g.task)).toEqual(['chat 1', 'chat 2', 'chat 3']);
    expect(new Set(got.map((g) => g.who)).size).toBe(1);
  });

  it('busy lanes: a sub-agent lane runs one action at a time here; the main lane waits while busy', async () => {
    newPrefix();
    const a = await runner();
    await a.q.push({ task: 'lane x 1', metadata: { lane: 'x' } });
    await a.q.push({ task: 'lane x 2', metadata: { lane: 'x' } });
    await a.q.push({ task: 'main' });
    const busy = new Set<string>(['main']);
    const x1 = await takeSoon(() => a.q.take((l) => busy.has(l)), 'the first lane action');
    expect(x1.task).toBe('lane x 1');
    busy.add('x');
    expect(await a.q.take((l) => busy.has(l))).toBeUndefined();
    busy.delete('main');
    expect((await a.q.take((l) => busy.has(l)))?.task).toBe('main');
    busy.add('main');
    await a.q.complete(x1.id, 'ok');
    busy.delete('x');
    expect((await a.q.take((l) => busy.has(l)))?.task).toBe('lane x 2');
  });

  it('retries wait 1 s, then 2 s; a retry past the TTL is none; a stop leaves none', async () => {
    newPrefix();
    const a = await runner();
    const pushed = await a.q.push({ task: 'flaky', maxRetries: 2 });
    await a.q.take();
    const t0 = Date.now();
    expect(await a.q.fail(pushed.id, 'boom')).toBe('retry');
    expect(a.q.get(pushed.id)).toMatchObject({ status: 'pending', error: 'boom', metadata: { retries: 1 } });
    expect(a.q.nextDueAt()).toBeGreaterThanOrEqual(t0 + 1000);
    expect(await a.q.take()).toBeUndefined();
    const again = await takeSoon(a.q, 'the retry');
    expect(again.metadata.retries).toBe(1);
    const short = await a.q.push({ task: 'short-lived', ttl: 900 });
    await a.q.complete(again.id, 'ok');
    await takeSoon(a.q, 'the short one');
    expect(await a.q.fail(short.id, 'boom')).toBe('failed');
    expect(a.q.get(short.id)?.error).toMatch(/not retried: the next retry would start after the action's TTL/);
  });

  it('a push retried with the same idempotency key, and a chat message queued on two machines, are one action each', async () => {
    newPrefix();
    const a = await runner({ owner: false });
    const b = await runner({ owner: false });
    const [x, y] = await Promise.all([
      a.q.push({ task: 'once' }, { idempotencyKey: 'req-42' }),
      b.q.push({ task: 'once' }, { idempotencyKey: 'req-42' }),
    ]);
    expect(y.id).toBe(x.id);
    const inbound = { inbound: { channel: 'chatA', messageId: '777' } };
    const [m1, m2] = await Promise.all([
      a.q.push({ task: 'hello', source: 'chatA', metadata: inbound }),
      b.q.push({ task: 'hello', source: 'chatA', metadata: inbound }),
    ]);
    expect(m2.id).toBe(m1.id);
    expect(await a.q.knowsInbound('chatA', '777')).toBe(true);
    expect(await a.q.knowsInbound('chatA', '778')).toBe(false);
    const viewer = await runner({ readOnly: true });
    expect(viewer.q.counts().pending).toBe(2);
  });

  it('signed (queueRedisSigningKey): a job added without the key is refused and reported, never run', async () => {
    newPrefix();
    const KEY = 'k'.repeat(16) + 'the-shared-signing-key';
    const a = await runner({ signingKey: KEY });
    const { Queue } = await import('bullmq');
    const raw = new Queue('main', { connection: { host: '127.0.0.1', port: Number(new URL(redis.url).port) }, prefix: `${prefix}bull` });
    const forged = {
      id: 'act_forged_1',
      task: 'rm -rf /',
      priority: 10,
      status: 'pending',
      createdAt: new Date().toISOString(),
      source: 'cli',
      metadata: { retries: 0, maxRetries: 0, ttl: 3_600_000, actor: { kind: 'operator', channel: 'cli' } },
    };
    await raw.add('action', { action: forged }, { jobId: forged.id, priority: 1 });
    await raw.add('action', { action: forged, sig: 'A'.repeat(43) }, { jobId: 'act_forged_2', priority: 1 });
    await raw.close();
    const genuine = await a.q.push({ task: 'genuine' });
    const other = await runner({ owner: false, signingKey: KEY });
    expect(await other.q.amend(genuine.id, { task: 'genuine, amended' })).toBe(true);
    const got = await takeSoon(a.q, 'the genuine one');
    expect(got.task).toBe('genuine, amended');
    expect(await a.q.take()).toBeUndefined();
    expect(a.log.text('error')).toMatch(/refused job act_forged_1 .* signature is missing or wrong/);
    expect((await a.q.fetch('act_forged_2'))?.status).toBe('failed');
  });

  it('moves the pending actions of the earlier stream queue into BullMQ once, with their ids, and says how many', async () => {
    newPrefix();
    const action = (id: string, task: string) => ({
      id,
      task,
      priority: 5,
      status: 'pending',
      createdAt: new Date().toISOString(),
      source: 'cli',
      metadata: { retries: 0, maxRetries: 3, ttl: 3_600_000 },
    });
    await admin.set(
      `${prefix}queue:base`,
      JSON.stringify({ v: 1, lastId: '0-0', snapshot: { actions: [action('act_1_old', 'from the base')], completed: [], failed: [] } }),
    );
    await admin.xadd(`${prefix}queue:ops`, '*', 'op', JSON.stringify({ op: 'push', action: action('act_2_old', 'from the stream') }));
    await admin.xadd(`${prefix}queue:ops`, '*', 'op', JSON.stringify({ op: 'push', action: action('act_3_old', 'then removed') }));
    await admin.xadd(`${prefix}queue:ops`, '*', 'op', JSON.stringify({ op: 'remove', id: 'act_3_old', reason: 'x' }));
    const [a, b] = await Promise.all([runner(), runner()]);
    const said = `${a.log.text('info')}\n${b.log.text('info')}`;
    expect(said.match(/moved 2 waiting action\(s\) from the earlier shared queue/g)).toHaveLength(1);
    expect(await admin.exists(`${prefix}queue:ops`)).toBe(0);
    expect(await admin.exists(`${prefix}queue:ops:migrated`)).toBe(1);
    const ids = [(await takeSoon(a.q, 'the first')).id, (await takeSoon(a.q, 'the second')).id].sort();
    expect(ids).toEqual(['act_1_old', 'act_2_old']);
    const c = await runner();
    expect(c.log.text('info')).not.toMatch(/moved/);
  });

  // These kill Redis or change its configuration: a private redis-server, not the run's shared one.
  describe('with a private redis-server', () => {
    const own = privateRedis();
    let shared: [SharedRedis | TestRedis, Redis];
    beforeAll(() => {
      shared = [redis, admin];
      redis = own();
      admin = own().admin();
    });
    afterAll(() => {
      [redis, admin] = shared;
    });

    it('acknowledged pushes survive kill -9 of Redis; a settle made while Redis is down lands when it is back', async () => {
      newPrefix();
      const a = await runner({ owner: false });
      const b = await runner({ leaseMs: 15_000 });
      for (let i = 0; i < 20; i++) await a.q.push({ task: `before ${i}` });
      const running = await takeSoon(b.q, 'b to take one');
      await own().kill();
      await expect(a.q.push({ task: 'while Redis is down' })).rejects.toMatchObject({ code: ErrorCodes.QUEUE_UNREACHABLE });
      // The completion cannot be written now: it is retried, not lost and not turned into a retry.
      const settling = b.q.complete(running.id, 'done during the outage');
      // Longer than the client's own retries: the write fails, and the queue's settle loop takes over.
      await new Promise((r) => setTimeout(r, 2500));
      await own().restart();
      await settling;
      // b leaves (what it had taken goes back): nothing may be left executing.
      await b.q.close();
      const fresh = await runner({ readOnly: true });
      expect(fresh.q.counts()).toMatchObject({ pending: 19, executing: 0, completed: 1 });
      expect((await fresh.q.fetch(running.id))?.result).toBe('done during the outage');
      expect(fresh.q.list().pending.map((x) => x.task)).not.toContain('while Redis is down');
      expect(b.log.text()).not.toMatch(/password/);
    });

    it('an unreachable Redis fails the open with a clear error that hides the password; memory-only Redis is said at open', async () => {
      const err = await BullQueue.open({
        url: 'redis://:sekret-pw@127.0.0.1:1/0',
        owner: true,
        log: captureLog(),
        connectTimeoutMs: 1000,
      }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: ErrorCodes.QUEUE_UNREACHABLE });
      expect(String((err as Error).message)).toMatch(/Cannot reach the queue's Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:1\/0/);
      expect(String((err as Error).message)).not.toContain('sekret-pw');
      newPrefix();
      await admin.config('SET', 'appendonly', 'no');
      try {
        const r = await runner();
        expect(r.log.text('warn')).toMatch(/in memory only \(appendonly is off\)/);
      } finally {
        await admin.config('SET', 'appendonly', 'yes');
      }
    });
  });
});
