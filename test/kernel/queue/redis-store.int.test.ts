/**
 * The shared queue (queueRedisUrl) against a real redis-server on 127.0.0.1: several runners, each with its own
 * KEEL_HOME as on separate machines, share one queue; claims are unambiguous, a dead runner's actions come back,
 * a runner that lost its action cannot settle it, Redis restarts lose nothing acknowledged, compaction trims the
 * stream and a reader that was away reloads.
 */
import type { Redis } from 'ioredis';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../../kernel/errors.js';
import { ActionQueue } from '../../../kernel/queue/index.js';
import { compareIds, RedisStore } from '../../../kernel/queue/redis-store.js';
import { rm, tmp, waitFor } from '../../helpers.js';
import { redisProblem, type TestRedis, privateRedis } from '../../redis-server.js';
import { captureLog, type CapturedLog } from './helpers.js';

const problem = redisProblem();
const server = privateRedis();
let redis: TestRedis;
let admin: Redis;
let prefix: string;
let n = 0;
const open: ActionQueue[] = [];
const homes: string[] = [];

beforeAll(async () => {
  if (problem) return;
  redis = server();
  admin = server().admin();
});

afterEach(async () => {
  for (const q of open.splice(0)) await q.close().catch(() => {});
  homes.splice(0).forEach(rm);
});

/** A fresh prefix per test: each test has a queue of its own in the one Redis. */
function newPrefix(): string {
  prefix = `t${++n}-${process.pid}:`;
  return prefix;
}

interface Opened {
  q: ActionQueue;
  log: CapturedLog;
}

async function runner(
  opts: { owner?: boolean; leaseMs?: number; trimLagMs?: number; compactMinOps?: number; signingKey?: string } = {},
): Promise<Opened> {
  const home = tmp('keel-worker-');
  homes.push(home);
  const log = captureLog();
  const store = new RedisStore({
    url: redis.url,
    prefix,
    owner: opts.owner ?? true,
    log,
    leaseMs: opts.leaseMs ?? 1000,
    ...(opts.trimLagMs !== undefined ? { trimLagMs: opts.trimLagMs } : {}),
    ...(opts.compactMinOps !== undefined ? { compactMinOps: opts.compactMinOps } : {}),
    ...(opts.signingKey !== undefined ? { signingKey: opts.signingKey } : {}),
  });
  const q = await ActionQueue.open({ home, owner: opts.owner ?? true, log, store, quietCompactMs: 0 });
  open.push(q);
  return { q, log };
}

const storeOf = (q: ActionQueue) => (q as unknown as { store: RedisStore }).store;

describe.skipIf(problem)('shared queue in Redis', () => {
  it('a push on one machine is seen by the others, in priority order, and survives a fresh open', async () => {
    newPrefix();
    const a = await runner({ owner: false });
    const b = await runner();
    await a.q.push({ task: 'low', priority: 2 });
    await a.q.push({ task: 'high', priority: 9 });
    await waitFor(() => b.q.counts().pending === 2, 'the other runner to see both pushes');
    expect(b.q.list().pending.map((x) => x.task)).toEqual(['high', 'low']);
    const c = await runner({ owner: false });
    expect(c.q.list().pending.map((x) => x.task)).toEqual(['high', 'low']);
  });

  it('three runners taking at once: every action is taken exactly once', async () => {
    newPrefix();
    const rs = await Promise.all([runner(), runner(), runner()]);
    const total = 90;
    for (let i = 0; i < total; i++) await rs[i % 3]!.q.push({ task: `t${i}` });
    await Promise.all(rs.map((r) => waitFor(() => r.q.counts().pending === total, 'every runner to see every push')));
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
    // the work was shared, not done by one
    expect(new Set(taken.values()).size).toBeGreaterThan(1);
    for (const r of rs) await waitFor(() => r.q.counts().completed === Math.min(total, 100), 'every view to show all completed');
    // each completed action carries the result of the runner that took it
    const byId = new Map(rs[0]!.q.list().completed.map((x) => [x.id, x.result]));
    for (const [id, who] of taken) expect(byId.get(id)).toBe(`by ${who}`);
  });

  it('a stop from another machine reaches the runner holding the action; a stopped action whose runner dies is not run again', async () => {
    newPrefix();
    const a = await runner({ leaseMs: 600 });
    const b = await runner({ leaseMs: 600 });
    const viewer = await runner({ owner: false });
    const one = await viewer.q.push({ task: 'stop me' });
    await waitFor(() => a.q.counts().pending === 1, 'a to see the push');
    expect((await a.q.take())?.id).toBe(one.id);
    const heard: string[] = [];
    a.q.onStop((id, reason) => heard.push(`${id}: ${reason}`));
    b.q.onStop((id) => heard.push(`b heard ${id}`));
    await waitFor(() => viewer.q.get(one.id)?.status === 'executing', 'the viewer to see it executing');
    expect(await viewer.q.stop(one.id, 'stopped on the dashboard of another machine')).toBe(true);
    // Every process hears it, each in its own time (b may hear first); only the one running the action has
    // something to abort (the runner's job).
    await waitFor(() => heard.includes(`${one.id}: stopped on the dashboard of another machine`), 'the runner holding it to hear the stop');
    await waitFor(() => heard.includes(`b heard ${one.id}`), 'the other runner to hear it too');
    expect(await a.q.fail(one.id, 'stopped on the dashboard of another machine')).toBe('failed');
    await waitFor(() => viewer.q.get(one.id)?.status === 'failed', 'the viewer to see it failed');
    expect(viewer.q.get(one.id)?.metadata.retries).toBe(0);

    // Stopped, then its runner is killed before it could abort: b's takeover fails it instead of running it.
    const two = await viewer.q.push({ task: 'stop me too' });
    await waitFor(() => a.q.counts().pending === 1, 'a to see the second push');
    expect((await a.q.take())?.id).toBe(two.id);
    await waitFor(() => viewer.q.get(two.id)?.status === 'executing', 'the viewer to see it executing');
    storeOf(a.q).crash();
    open.splice(open.indexOf(a.q), 1);
    expect(await viewer.q.stop(two.id, 'runaway')).toBe(true);
    await waitFor(() => b.q.get(two.id)?.status === 'failed', "b's orphan check to fail it");
    expect(b.q.get(two.id)).toMatchObject({ error: 'runaway' });
    expect(await b.q.take()).toBeUndefined();
  });

  it("a killed runner's action goes back after its lease and runs elsewhere; the killed one's late result is refused", async () => {
    newPrefix();
    const a = await runner({ leaseMs: 600 });
    const b = await runner({ leaseMs: 600 });
    const pushed = await a.q.push({ task: 'survive me' });
    await waitFor(() => b.q.counts().pending === 1, 'b to see the push');
    const took = await a.q.take();
    expect(took?.id).toBe(pushed.id);
    await waitFor(() => b.q.counts().executing === 1, 'b to see it executing');
    expect(await b.q.take()).toBeUndefined();
    // kill -9: no close, no lease release
    storeOf(a.q).crash();
    open.splice(open.indexOf(a.q), 1);
    const again = await waitFor(
      async () => (b.q.get(pushed.id)?.status === 'pending' ? b.q.take() : undefined),
      'b to take it over',
      10_000,
    );
    expect(again.id).toBe(pushed.id);
    expect(b.log.text('warn')).toMatch(/executing on a runner that is gone.*pending again/);
    // The dead runner's settle, had it reached Redis after all, is fenced off: the op names a runner that no
    // longer holds the action.
    await storeOf(b.q).append([{ op: 'complete', id: pushed.id, result: 'stale', at: Date.now(), by: storeOf(a.q).worker! }]);
    expect(b.q.get(pushed.id)?.status).toBe('executing');
    await b.q.complete(pushed.id, 'fresh');
    expect(b.q.get(pushed.id)?.result).toBe('fresh');
  });

  it('a runner whose lease lapsed (paused, cut off) cannot settle the action another runner took over', async () => {
    newPrefix();
    const a = await runner({ leaseMs: 600 });
    const b = await runner({ leaseMs: 600 });
    const pushed = await a.q.push({ task: 'paused runner' });
    await waitFor(() => b.q.counts().pending === 1, 'b to see the push');
    await a.q.take();
    // a's lease lapses as if the process had been paused longer than its lease
    const aLease = `${prefix}queue:worker:${storeOf(a.q).worker}`;
    await admin.del(aLease);
    clearInterval((storeOf(a.q) as unknown as { leaseTimer: NodeJS.Timeout }).leaseTimer);
    const taken = await waitFor(
      async () => (b.q.get(pushed.id)?.status === 'pending' ? b.q.take() : undefined),
      'b to take it over',
      10_000,
    );
    expect(taken.id).toBe(pushed.id);
    await waitFor(() => a.q.get(pushed.id)?.status === 'executing' && a.q.counts().executing === 1, 'a to see it taken again');
    await expect(a.q.complete(pushed.id, 'late')).rejects.toMatchObject({ code: ErrorCodes.ACTION_NOT_EXECUTING });
    await expect(a.q.fail(pushed.id, 'late')).rejects.toThrow(/another runner took the action over/);
    await b.q.complete(pushed.id, 'b did it');
    await waitFor(() => a.q.get(pushed.id)?.result === 'b did it', 'a to see b’s result');
  });

  it('passes over actions a runner must not run, and leaves their place to another runner', async () => {
    newPrefix();
    const a = await runner();
    const b = await runner();
    await a.q.push({ task: 'for b', priority: 9, metadata: { only: 'b' } });
    await a.q.push({ task: 'for anyone', priority: 5 });
    await waitFor(() => b.q.counts().pending === 2, 'b to see both');
    const notB = (x: { metadata: Record<string, unknown> }) => x.metadata.only !== 'b';
    const first = await a.q.take(undefined, notB);
    expect(first?.task).toBe('for anyone');
    expect(await a.q.take(undefined, notB)).toBeUndefined();
    await waitFor(() => b.q.counts().executing === 1, 'b to see a’s claim');
    expect((await b.q.take())?.task).toBe('for b');
  });

  it('acknowledged pushes survive kill -9 of Redis (appendfsync always), and runners carry on after it restarts', async () => {
    newPrefix();
    const a = await runner({ owner: false });
    const b = await runner();
    for (let i = 0; i < 20; i++) await a.q.push({ task: `before ${i}` });
    await redis.kill();
    // while Redis is down a push is refused (not acknowledged and lost), with the code the channel kit waits on
    await expect(a.q.push({ task: 'while Redis is down' })).rejects.toMatchObject({ code: ErrorCodes.QUEUE_UNREACHABLE });
    await redis.restart();
    const fresh = await runner({ owner: false });
    expect(fresh.q.list().pending.map((x) => x.task)).not.toContain('while Redis is down');
    expect(fresh.q.counts().pending).toBe(20);
    // the open queues reconnect by themselves
    await waitFor(
      () =>
        a.q
          .push({ task: 'after' })
          .then(() => true)
          .catch(() => false),
      'a push after the restart',
      15_000,
    );
    await waitFor(() => b.q.counts().pending === 21, 'b to see the push made after the restart', 15_000);
    expect(a.log.text('warn')).toMatch(/lost the connection to Redis/);
    expect(a.log.text()).not.toMatch(/\d+\.\d+\.\d+\.\d+:\d+.*password/);
  });

  it('compaction folds the stream into the base and trims it; a new open and a reader that was away see the same queue', async () => {
    newPrefix();
    const a = await runner({ trimLagMs: 0, compactMinOps: 10 });
    const away = await runner({ owner: false });
    // `away` stops following (its reader is gone) and misses what comes next
    (storeOf(away.q) as unknown as { reader: Redis }).reader.disconnect();
    await new Promise((r) => setTimeout(r, 50));
    for (let i = 0; i < 30; i++) await a.q.push({ task: `c${i}`, priority: (i % 10) + 1 });
    for (let i = 0; i < 5; i++) {
      const t = await a.q.take();
      await a.q.complete(t!.id, 'ok');
    }
    // Trimming keeps what is younger than the lag (0 here): an entry of the very millisecond the compaction runs in
    // would stay. Let that millisecond pass first.
    await new Promise((r) => setTimeout(r, 5));
    expect(await a.q.compact()).toBe(true);
    expect(await admin.xlen(`${prefix}queue:ops`)).toBe(0);
    const base = JSON.parse((await admin.get(`${prefix}queue:base`))!) as { lastId: string };
    expect(compareIds(base.lastId, '0-0')).toBeGreaterThan(0);
    const fresh = await runner({ owner: false });
    expect(fresh.q.list()).toEqual(a.q.list());
    // the away reader's main connection drops and comes back: it finds the trimmed gap and reloads from the base
    const id = (await (storeOf(away.q) as unknown as { redis: Redis }).redis.client('ID')) as number;
    await admin.client('KILL', 'ID', String(id));
    await waitFor(() => away.q.counts().completed === 5, 'the away reader to reload', 10_000);
    expect(away.q.list()).toEqual(a.q.list());
    expect(away.log.text('warn')).toMatch(/reloaded/);
  });

  it('signed (queueRedisSigningKey): ops written without the key, or with another, are ignored and reported; a tampered base too', async () => {
    newPrefix();
    const KEY = 'k'.repeat(16) + 'the-shared-signing-key';
    const a = await runner({ signingKey: KEY, trimLagMs: 0, compactMinOps: 1_000_000 });
    const other = await runner({ owner: false, signingKey: KEY });
    // Something else that can write to this Redis queues a task as the operator: once unsigned, once signed with
    // another key, once with a signature copied from a genuine op onto another body.
    const forged = (task: string) =>
      JSON.stringify({
        op: 'push',
        action: {
          id: `act_forged_${task}`,
          task,
          priority: 10,
          status: 'pending',
          createdAt: new Date().toISOString(),
          metadata: { retries: 0, maxRetries: 0, ttl: 3_600_000, actor: { kind: 'operator', channel: 'cli' } },
        },
      });
    await admin.xadd(`${prefix}queue:ops`, '*', 'op', forged('unsigned'));
    const { signerOf } = await import('../../../sdk/signing.js');
    const wrong = signerOf('w'.repeat(40), prefix)!;
    await admin.xadd(`${prefix}queue:ops`, '*', 'op', forged('wrong-key'), 's', wrong.sign(forged('wrong-key')));
    const genuine = await other.q.push({ task: 'genuine' });
    const entries = await admin.xrange(`${prefix}queue:ops`, '-', '+');
    const sigOfGenuine = entries.at(-1)![1][3]!;
    await admin.xadd(`${prefix}queue:ops`, '*', 'op', forged('copied-sig'), 's', sigOfGenuine);
    // `keel push` from a machine with the key is signed too.
    const { pushToRedis } = await import('../../../kernel/queue/redis-store.js');
    const { createAction } = await import('../../../kernel/queue/action.js');
    const cli = createAction({ task: 'from keel push' }, Date.now());
    await pushToRedis({ url: redis.url, prefix, signingKey: KEY }, cli);
    await waitFor(() => a.q.get(cli.id) !== undefined, 'the runner to see the signed keel push');
    expect(a.q.list().pending.map((x) => x.task)).toEqual(['genuine', 'from keel push']);
    expect(a.q.get(genuine.id)?.task).toBe('genuine');
    for (const t of ['unsigned', 'wrong-key', 'copied-sig']) expect(a.q.get(`act_forged_${t}`)).toBeUndefined();
    expect(a.log.text('error')).toMatch(/ignored stream entry .* its signature is missing or wrong \(queueRedisSigningKey\)/);
    expect(a.log.text('error').match(/ignored stream entry/g)).toHaveLength(3);
    // A fresh open reads the same: the forged entries are still in the stream and still ignored.
    const fresh = await runner({ owner: false, signingKey: KEY });
    expect(fresh.q.list().pending.map((x) => x.task)).toEqual(['genuine', 'from keel push']);

    // The base is signed; rewritten by something without the key, it is not believed.
    expect(await a.q.compact()).toBe(true);
    const base = JSON.parse((await admin.get(`${prefix}queue:base`))!) as { sig?: string; snapshot: { actions: Array<{ task: string }> } };
    expect(base.sig).toMatch(/^[A-Za-z0-9_-]{43}$/);
    base.snapshot.actions[0]!.task = 'rm -rf / (rewritten)';
    await admin.set(`${prefix}queue:base`, JSON.stringify(base));
    const afterTamper = await runner({ owner: false, signingKey: KEY });
    expect(afterTamper.q.list().pending.map((x) => x.task)).not.toContain('rm -rf / (rewritten)');
    expect(afterTamper.q.problems.join('\n')).toMatch(/base in Redis .* is unreadable \(its signature is missing or wrong/);
  });

  it('an unreachable Redis fails the open with a clear error that hides the password', async () => {
    const store = new RedisStore({ url: 'redis://:sekret-pw@127.0.0.1:1/0', owner: true, log: captureLog(), connectTimeoutMs: 1000 });
    const err = await ActionQueue.open({ home: tmp('keel-worker-'), owner: true, store }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: ErrorCodes.QUEUE_UNREACHABLE });
    expect(String((err as Error).message)).toMatch(/Cannot reach the queue's Redis at redis:\/\/:\*\*\*@127\.0\.0\.1:1\/0/);
    expect(String((err as Error).message)).not.toContain('sekret-pw');
  });

  it('says at open when Redis keeps the queue in memory only', async () => {
    newPrefix();
    await admin.config('SET', 'appendonly', 'no');
    try {
      const r = await runner();
      expect(r.log.text('warn')).toMatch(/in memory only \(appendonly is off\)/);
    } finally {
      await admin.config('SET', 'appendonly', 'yes');
    }
    const r2 = await runner();
    expect(r2.log.text('warn')).not.toMatch(/in memory only/);
  });
});
