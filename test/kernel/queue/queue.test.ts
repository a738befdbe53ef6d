import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../../kernel/errors.js';
import { ActionQueue, type ActionQueueOptions, isOwnerAlive } from '../../../kernel/queue/index.js';
import { captureLog, FakeClock, tempHome } from './helpers.js';

let home: string;
let cleanup: () => void;
let clock: FakeClock;
const open: ActionQueue[] = [];

async function openQueue(opts: { [K in keyof ActionQueueOptions]?: ActionQueueOptions[K] | undefined } = {}): Promise<ActionQueue> {
  const q = await ActionQueue.open({ home, owner: true, clock, log: captureLog(), ...opts } as ActionQueueOptions);
  open.push(q);
  return q;
}

beforeEach(() => {
  ({ home, cleanup } = tempHome());
  clock = new FakeClock();
});

afterEach(async () => {
  for (const q of open.splice(0)) await q.close();
  cleanup();
});

async function takeAll(q: ActionQueue): Promise<string[]> {
  const out: string[] = [];
  for (let a = await q.take(); a; a = await q.take()) out.push(a.task);
  return out;
}

describe('ActionQueue order', () => {
  it('runs the highest priority first, first-in first-out within a priority', async () => {
    const q = await openQueue();
    for (const [task, priority] of [
      ['a', 5],
      ['b', 10],
      ['c', 5],
      ['d', 1],
      ['e', 10],
      ['f', 5],
    ] as const) {
      await q.push({ task, priority });
    }
    expect(q.list().pending.map((a) => a.task)).toEqual(['b', 'e', 'a', 'c', 'f', 'd']);
    expect(await takeAll(q)).toEqual(['b', 'e', 'a', 'c', 'f', 'd']);
  });

  it('lists executing actions with the pending ones and counts them', async () => {
    const q = await openQueue();
    await q.push({ task: 'one' });
    await q.push({ task: 'two' });
    const taken = await q.take();
    const { pending } = q.list();
    expect(pending.map((a) => [a.task, a.status])).toEqual([
      ['one', 'executing'],
      ['two', 'pending'],
    ]);
    expect(q.counts()).toEqual({ pending: 2, executing: 1, completed: 0, failed: 0 });
    expect(q.get(taken!.id)?.status).toBe('executing');
  });
});

describe('ActionQueue push validation', () => {
  it('clamps out-of-range priorities and defaults to 5', async () => {
    const q = await openQueue();
    const low = await q.push({ task: 'low', priority: 0 });
    const high = await q.push({ task: 'high', priority: 15 });
    const dflt = await q.push({ task: 'default' });
    expect([low.priority, high.priority, dflt.priority]).toEqual([1, 10, 5]);
    expect(q.get(high.id)?.priority).toBe(10);
  });

  it('rejects a non-number priority or a blank task and queues nothing, even after reopening', async () => {
    const q = await openQueue();
    await expect(q.push({ task: 'x', priority: 'abc' })).rejects.toMatchObject({ code: ErrorCodes.PRIORITY_INVALID });
    await expect(q.push({ task: '   ' })).rejects.toMatchObject({ code: ErrorCodes.TASK_EMPTY });
    expect(q.counts().pending).toBe(0);
    await q.close();
    const again = await openQueue();
    expect(again.counts().pending).toBe(0);
    expect(readFileSync(join(home, 'actions.journal'), 'utf8')).not.toMatch(/"op":"push"/);
  });
});

describe('ActionQueue retries and TTL', () => {
  it('backs off 1 s, 2 s, 4 s between retries, then fails for good after maxRetries', async () => {
    const q = await openQueue();
    const pushed = await q.push({ task: 'flaky' });
    const waits: number[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      const a = await q.take();
      expect(a?.id).toBe(pushed.id);
      expect(await q.fail(pushed.id, `boom ${attempt}`)).toBe('retry');
      const due = q.nextDueAt()!;
      waits.push(due - clock.now());
      expect(q.get(pushed.id)).toMatchObject({ status: 'pending', error: `boom ${attempt}`, metadata: { retries: attempt } });
      // Not before its time...
      clock.advance(due - clock.now() - 1);
      expect(await q.take()).toBeUndefined();
      // ...but right then.
      clock.advance(1);
    }
    expect(waits).toEqual([1000, 2000, 4000]);
    expect((await q.take())?.id).toBe(pushed.id);
    expect(await q.fail(pushed.id, 'boom 4')).toBe('failed');
    expect(await q.take()).toBeUndefined();
    const failed = q.list().failed;
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ id: pushed.id, status: 'failed', error: 'boom 4', metadata: { retries: 3 } });
    expect(q.counts()).toMatchObject({ pending: 0, failed: 1 });
  });

  it('honours a smaller maxRetries', async () => {
    const q = await openQueue();
    const a = await q.push({ task: 'once', maxRetries: 0 });
    await q.take();
    expect(await q.fail(a.id, 'no')).toBe('failed');
  });

  it('puts a retried action at the back of its priority once its backoff has passed', async () => {
    const q = await openQueue();
    await q.push({ task: 'A' });
    await q.push({ task: 'B' });
    const a = await q.take();
    await q.fail(a!.id, 'x');
    clock.advance(1000);
    await q.push({ task: 'C', priority: 5 });
    expect(await takeAll(q)).toEqual(['B', 'A', 'C']);
  });

  it('removes a pending action whose TTL passed instead of running it', async () => {
    const q = await openQueue();
    const old = await q.push({ task: 'stale', ttl: 1000, priority: 9 });
    const fresh = await q.push({ task: 'fresh', priority: 1 });
    clock.advance(1000);
    const got = await q.take();
    expect(got?.id).toBe(fresh.id);
    expect(q.get(old.id)).toBeUndefined();
  });

  it('sweep removes expired pending and failed actions, not live ones', async () => {
    const q = await openQueue();
    const pending = await q.push({ task: 'p', ttl: 5000 });
    const failing = await q.push({ task: 'f', ttl: 5000, maxRetries: 0, priority: 10 });
    const keeper = await q.push({ task: 'k', ttl: 60_000 });
    expect((await q.take())?.id).toBe(failing.id);
    await q.fail(failing.id, 'nope');
    clock.advance(4999);
    expect(await q.sweep()).toEqual([]);
    clock.advance(1);
    const removed = await q.sweep();
    expect(removed.map((a) => [a.id, a.status]).sort()).toEqual(
      [
        [pending.id, 'pending'],
        [failing.id, 'failed'],
      ].sort(),
    );
    expect(q.list().failed).toEqual([]);
    expect(q.list().pending.map((a) => a.id)).toEqual([keeper.id]);
    await q.close();
    const again = await openQueue();
    expect(again.list().pending.map((a) => a.id)).toEqual([keeper.id]);
    expect(again.list().failed).toEqual([]);
  });
});

describe('ActionQueue history and persistence', () => {
  it('keeps only the newest completed and failed actions', async () => {
    const q = await openQueue({ completedLimit: 3, failedLimit: 2 });
    const done: string[] = [];
    const failed: string[] = [];
    for (let i = 0; i < 5; i++) {
      const a = await q.push({ task: `c${i}`, priority: 10 });
      await q.take();
      await q.complete(a.id, `result ${i}`);
      done.push(a.id);
      const f = await q.push({ task: `f${i}`, maxRetries: 0 });
      await q.take();
      await q.fail(f.id, 'bad');
      failed.push(f.id);
    }
    const check = (x: ActionQueue) => {
      expect(x.list().completed.map((a) => a.id)).toEqual(done.slice(-3).reverse());
      expect(x.list().failed.map((a) => a.id)).toEqual(failed.slice(-2).reverse());
      expect(x.list().completed[0]).toMatchObject({ status: 'completed', result: 'result 4' });
      expect(x.counts()).toMatchObject({ completed: 3, failed: 2 });
    };
    check(q);
    await q.close();
    check(await openQueue({ completedLimit: 3, failedLimit: 2 }));
  });

  it('keeps pending order, retries and results across close and reopen', async () => {
    const q = await openQueue();
    for (const [task, priority] of [
      ['a', 3],
      ['b', 8],
      ['c', 3],
      ['d', 8],
    ] as const)
      await q.push({ task, priority });
    const b = await q.take();
    await q.complete(b!.id, 'done b');
    const d = await q.take();
    await q.fail(d!.id, 'retry d');
    const before = q.list();
    await q.close();
    const again = await openQueue();
    expect(again.list()).toEqual(before);
    expect(JSON.parse(readFileSync(join(home, 'actions.json'), 'utf8')).actions).toHaveLength(3);
    clock.advance(1000);
    expect(await takeAll(again)).toEqual(['d', 'a', 'c']);
  });

  it('puts actions left executing back to pending, first in line and not counted as a retry', async () => {
    const q = await openQueue();
    await q.push({ task: 'first' });
    await q.push({ task: 'second' });
    const running = await q.take();
    // A runner that stops mid-action leaves it executing on disk.
    await q.close();
    const again = await openQueue();
    expect(again.get(running!.id)).toMatchObject({ status: 'pending', metadata: { retries: 0 } });
    expect(await takeAll(again)).toEqual(['first', 'second']);
  });

  it('compacts the journal into actions.json once it grows, losing nothing', async () => {
    const q = await openQueue({ fileStore: { compactMinOps: 50 } });
    const ids: string[] = [];
    for (let i = 0; i < 300; i++) ids.push((await q.push({ task: `t${i}`, priority: (i % 10) + 1 })).id);
    await q.compact();
    const snap = JSON.parse(readFileSync(join(home, 'actions.json'), 'utf8'));
    expect(snap.actions).toHaveLength(300);
    expect(typeof snap.journal).toBe('string');
    expect(readFileSync(join(home, 'actions.journal'), 'utf8').trim().split('\n')).toHaveLength(1);
    expect(existsSync(join(home, 'actions.json.bak'))).toBe(true);
    expect(existsSync(join(home, 'actions.journal.bak'))).toBe(true);
    const order = q.list().pending.map((a) => a.id);
    await q.close();
    const again = await openQueue();
    expect(again.list().pending.map((a) => a.id)).toEqual(order);
    expect(new Set(order)).toEqual(new Set(ids));
  });

  it('handles pushes racing with each other: every concurrent push is durable and listed once', async () => {
    const q = await openQueue();
    const acks = await Promise.all(Array.from({ length: 500 }, (_, i) => q.push({ task: `c${i}` })));
    expect(new Set(acks.map((a) => a.id)).size).toBe(500);
    await q.close();
    const again = await openQueue();
    expect(again.list().pending.map((a) => a.task)).toEqual(acks.map((a) => a.task));
  });
});

describe('ActionQueue ownership', () => {
  it('lets one owner per home; others may push and read but not take', async () => {
    const owner = await openQueue();
    expect(isOwnerAlive(home)).toBe(true);
    await expect(openQueue()).rejects.toMatchObject({ code: ErrorCodes.ALREADY_RUNNING });
    const other = await openQueue({ owner: false });
    await expect(other.take()).rejects.toMatchObject({ code: ErrorCodes.QUEUE_NOT_OWNER });
    const a = await other.push({ task: 'from elsewhere' });
    expect(other.get(a.id)?.task).toBe('from elsewhere');
    await owner.close();
    expect(isOwnerAlive(home)).toBe(false);
  });

  it('refuses to settle an action that is not executing, and anything after close', async () => {
    const q = await openQueue();
    const a = await q.push({ task: 't' });
    await expect(q.complete(a.id, 'r')).rejects.toMatchObject({ code: ErrorCodes.ACTION_NOT_EXECUTING });
    await expect(q.fail('act_1_nothere', 'e')).rejects.toMatchObject({ code: ErrorCodes.ACTION_NOT_FOUND });
    expect(await q.remove(a.id, 'user cancelled')).toBe(true);
    expect(await q.remove(a.id, 'again')).toBe(false);
    await q.close();
    await expect(q.push({ task: 'late' })).rejects.toMatchObject({ code: ErrorCodes.QUEUE_CLOSED });
  });

  it('tells listeners about changes', async () => {
    const q = await openQueue();
    let calls = 0;
    const off = q.onChange(() => calls++);
    await q.push({ task: 't' });
    expect(calls).toBeGreaterThan(0);
    off();
    const seen = calls;
    await q.push({ task: 'u' });
    expect(calls).toBe(seen);
  });
});

describe('ActionQueue views from other processes', () => {
  /** Resolves once `check` holds, looking again at each change (and now and then, for compactions). */
  async function until(q: ActionQueue, check: () => boolean): Promise<void> {
    while (!check()) {
      await new Promise<void>((resolve) => {
        const off = q.onChange(() => {
          off();
          resolve();
        });
        setTimeout(() => {
          off();
          resolve();
        }, 50);
      });
    }
  }

  it('a non-owner follows the owner across compactions, and its pushes reach the owner', async () => {
    const owner = await openQueue({ clock: undefined });
    const viewer = await openQueue({ owner: false, clock: undefined });
    const a = await owner.push({ task: 'a' });
    await until(viewer, () => viewer.get(a.id) !== undefined);
    await owner.complete((await owner.take())!.id, 'done');
    await owner.compact();
    await until(viewer, () => viewer.get(a.id)?.status === 'completed');
    const b = await viewer.push({ task: 'b from the viewer' });
    await until(owner, () => owner.get(b.id) !== undefined);
    expect((await owner.take())?.id).toBe(b.id);
    expect(viewer.problems).toEqual([]);
    expect(owner.problems).toEqual([]);
  });

  it('amend changes a waiting action in place (its place, priority and retries kept), durably; never a started one', async () => {
    const q = await openQueue();
    const a = await q.push({ task: 'deploy to stagng', metadata: { replyTo: { chatId: '9' } } });
    const b = await q.push({ task: 'then tell the team' });
    expect(await q.amend(a.id, { task: 'deploy to staging', metadata: { edit: { of: 'm1', at: 'e1' } } })).toBe(true);
    expect(q.list().pending.map((x) => [x.id, x.task])).toEqual([
      [a.id, 'deploy to staging'],
      [b.id, 'then tell the team'],
    ]);
    const amended = q.get(a.id)!;
    expect(amended.metadata).toMatchObject({ replyTo: { chatId: '9' }, edit: { of: 'm1', at: 'e1' }, retries: 0 });
    expect(amended.priority).toBe(a.priority);
    await expect(q.amend(a.id, { task: '  ' })).rejects.toMatchObject({ code: ErrorCodes.TASK_EMPTY });
    expect(await q.amend('act_nope', { task: 'x' })).toBe(false);
    // Kept across a reopen (the journal replays the op), and a non-owner reading the journal sees it too.
    await q.close();
    open.splice(open.indexOf(q), 1);
    const again = await openQueue();
    expect(again.list().pending.map((x) => x.task)).toEqual(['deploy to staging', 'then tell the team']);
    const viewer = await openQueue({ owner: false });
    expect(viewer.get(a.id)?.task).toBe('deploy to staging');
    // Started: it runs what it was given; the amend changes nothing.
    const taken = await again.take();
    expect(taken?.id).toBe(a.id);
    expect(await again.amend(a.id, { task: 'something else' })).toBe(false);
    expect(again.get(a.id)?.task).toBe('deploy to staging');
    await again.complete(a.id, 'done');
    expect(await again.amend(a.id, { task: 'something else' })).toBe(false);
  });

  it('stop from another process: the owner hears it, the action fails for good with the reason (no retry)', async () => {
    const owner = await openQueue({ clock: undefined });
    const viewer = await openQueue({ owner: false, clock: undefined });
    const a = await owner.push({ task: 'long job' }); // default maxRetries: retries left
    expect((await owner.take())?.id).toBe(a.id);
    const heard: Array<[string, string]> = [];
    owner.onStop((id, reason) => heard.push([id, reason]));
    await until(viewer, () => viewer.get(a.id)?.status === 'executing');
    expect(await viewer.stop(a.id, 'stopped from the dashboard')).toBe(true);
    expect(await viewer.stop(a.id, 'twice')).toBe(false);
    await until(owner, () => heard.length > 0);
    expect(heard).toEqual([[a.id, 'stopped from the dashboard']]);
    expect(owner.stopReason(a.id)).toBe('stopped from the dashboard');
    // The runner's abort ends in fail(): a failure for good, though it had retries left.
    expect(await owner.fail(a.id, 'stopped from the dashboard')).toBe('failed');
    expect(owner.get(a.id)).toMatchObject({ status: 'failed', error: 'stopped from the dashboard' });
    await until(viewer, () => viewer.get(a.id)?.status === 'failed');
    // Not executing: nothing to stop, nothing written.
    expect(await viewer.stop(a.id, 'late')).toBe(false);
    const pending = await viewer.push({ task: 'waiting' });
    expect(await viewer.stop(pending.id, 'not running')).toBe(false);
    expect(viewer.get(pending.id)?.status).toBe('pending');
  });

  it('a stopped action whose runner died is not run again: the restart fails it with the stop reason', async () => {
    const q = await openQueue();
    const a = await q.push({ task: 'runaway' });
    const b = await q.push({ task: 'innocent' });
    await q.take();
    expect(await q.stop(a.id, 'cancelled by the operator (gateway)')).toBe(true);
    // The runner dies before it aborts it (the process is gone, nothing settled).
    await q.close();
    open.splice(open.indexOf(q), 1);
    const again = await openQueue();
    expect(again.get(a.id)).toMatchObject({ status: 'failed', error: 'cancelled by the operator (gateway)' });
    expect(again.list().pending.map((x) => x.id)).toEqual([b.id]);
    expect((await again.take())?.id).toBe(b.id);
    expect(again.problems).toEqual([]);
  });

  it('a stop outlives a compaction; a completion that beat it stands', async () => {
    const q = await openQueue();
    const a = await q.push({ task: 'one' });
    const b = await q.push({ task: 'two' });
    await q.take();
    await q.stop(a.id, 'stop one');
    await q.compact();
    const snap = JSON.parse(readFileSync(join(home, 'actions.json'), 'utf8')) as { stops?: Record<string, { reason: string }> };
    expect(snap.stops?.[a.id]?.reason).toBe('stop one');
    await q.close();
    open.splice(open.indexOf(q), 1);
    const again = await openQueue();
    expect(again.get(a.id)).toMatchObject({ status: 'failed', error: 'stop one' });
    // Completed before the runner saw the stop: the result stands.
    await again.take();
    expect(await again.stop(b.id, 'too late')).toBe(true);
    await again.complete(b.id, 'finished');
    expect(again.get(b.id)).toMatchObject({ status: 'completed', result: 'finished' });
    expect(again.stopReason(b.id)).toBeUndefined();
  });

  it('the stop op replays the same everywhere: racing a requeue or a retry, it fails the action; malformed, it is refused', async () => {
    const { QueueState } = await import('../../../kernel/queue/state.js');
    const { decodeOp } = await import('../../../kernel/queue/ops.js');
    const q = await openQueue();
    const x = await q.push({ task: 'x' });
    const action = () => ({ ...q.get(x.id)!, metadata: { ...q.get(x.id)!.metadata } });
    const fold = (ops: Parameters<InstanceType<typeof QueueState>['apply']>[0][]) => {
      const st = new QueueState({ completedLimit: 10, failedLimit: 10 });
      st.reset({ actions: [action()], completed: [], failed: [] }, 0);
      for (const op of ops) st.apply(op, 0);
      return st.get(x.id);
    };
    const stop = { op: 'stop', id: x.id, reason: 'operator', at: 1_700_000_000_000 } as const;
    // Requeued (its runner died) before the stop was applied: pending when the stop lands, failed at once.
    expect(fold([{ op: 'start', id: x.id }, { op: 'requeue', id: x.id }, stop])).toMatchObject({ status: 'failed', error: 'operator' });
    // Stop, then the runner's retry: failed for good, at the stop's time.
    expect(fold([{ op: 'start', id: x.id }, stop, { op: 'retry', id: x.id, retries: 1, notBefore: 5, error: 'operator' }])).toMatchObject({
      status: 'failed',
      settledAt: new Date(stop.at).toISOString(),
    });
    // A stop of a settled action changes nothing.
    expect(fold([{ op: 'start', id: x.id }, { op: 'complete', id: x.id, result: 'r', at: 1 }, stop])).toMatchObject({
      status: 'completed',
    });
    expect(decodeOp(JSON.stringify(stop))).toEqual(stop);
    expect(() => decodeOp(JSON.stringify({ op: 'stop', id: x.id, reason: 'no time' }))).toThrow(/not a valid queue op/);
  });

  it('readQueueList and readQueueCounts read without writing anything', async () => {
    const { readQueueCounts, readQueueList } = await import('../../../kernel/queue/index.js');
    expect(await readQueueCounts(join(home, 'nothing-here'))).toEqual({ pending: 0, executing: 0, completed: 0, failed: 0 });
    expect(existsSync(join(home, 'nothing-here'))).toBe(false);
    const q = await openQueue();
    await q.push({ task: 'x', priority: 2 });
    await q.push({ task: 'y', priority: 9 });
    expect((await readQueueList(home)).pending.map((a) => a.task)).toEqual(['y', 'x']);
    expect(await readQueueCounts(home)).toMatchObject({ pending: 2 });
  });

  it('an empty journal file (touched by hand) gets a header before the first op', async () => {
    const { writeFileSync } = await import('node:fs');
    const { appendPush } = await import('../../../kernel/queue/index.js');
    writeFileSync(join(home, 'actions.journal'), '');
    await appendPush(home, { task: 'after touch' });
    const q = await openQueue();
    expect(q.problems).toEqual([]);
    expect(q.list().pending.map((a) => a.task)).toEqual(['after touch']);
  });
});
