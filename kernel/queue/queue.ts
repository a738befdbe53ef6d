/**
 * The action queue (SPEC "Action", "Action lifecycle"): priority order, retries with backoff, TTL, bounded
 * history, durable on every acknowledged change.
 *
 * Every change is written to the store first and applied to memory only when the store hands the op back (see
 * QueueStore.load), so memory follows the journal's order exactly, whichever process wrote each op.
 *
 * Delivery is at-least-once: an action that was executing when its runner died goes back to pending when the next
 * owner opens the queue, and runs again. A skill with side effects should tolerate that.
 */
import type { Action, Logger, PushInput } from '../../sdk/types.js';
import { ErrorCodes, errorMessage, KeelError } from '../errors.js';
import { backoffMs, consoleLog, copyAction, createAction, expiresAt } from './action.js';
import { FileStore, type FileStoreOptions } from './file-store.js';
import type { QueueOp } from './ops.js';
import type { PushOptions, QueueCounts, QueueEngine, QueueList } from './engine.js';
import { QueueState } from './state.js';
import type { QueueStore, StoreChange } from './store.js';
import type { SharedQueueOptions } from './bull-queue.js';

export interface ActionQueueOptions {
  home: string;
  /** The owner (the runner, one per KEEL_HOME) takes and settles actions and compacts the files. */
  owner: boolean;
  clock?: { now(): number };
  /** Completed actions kept, newest first (default 100). */
  completedLimit?: number;
  /** Failed actions kept, newest first (default 100). */
  failedLimit?: number;
  log?: Logger;
  /** Another backend; default: the file store in `home`. */
  store?: QueueStore;
  /** Read the state once and change nothing (for `keel status`, `keel tasks`). */
  readOnly?: boolean;
  /** Tuning of the default file store. */
  /** Quiet time (ms) after which `actions.json` is brought up to date; 0 turns it off. Default {@link QUIET_COMPACT_MS}. */
  quietCompactMs?: number;
  fileStore?: Pick<FileStoreOptions, 'lockTimeoutMs' | 'pollMs' | 'compactMinOps' | 'compactMinBytes'>;
}

export type { QueueCounts, QueueList } from './engine.js';

export { backoffMs } from './action.js';

const copy = copyAction;

const COMPACT_RETRY_MS = 30_000;
/** Quiet time after the last change before `actions.json` is brought up to date (debounced compaction). */
export const QUIET_COMPACT_MS = 1000;

export class ActionQueue implements QueueEngine {
  /** Corruption found while opening or reading (also logged). Empty when all is well. */
  readonly problems: string[] = [];
  readonly owner: boolean;
  private readonly state: QueueState;
  private readonly listeners = new Set<() => void>();
  private readonly stopListeners = new Set<(id: string, reason: string) => void>();
  private readonly clock: { now(): number };
  private readonly log: Logger;
  private closed = false;
  private compacting = false;
  private compactRefusedAt = -Infinity;
  /** Debounced compaction: one timer, re-armed when it fires before the queue was quiet long enough. */
  private quietTimer: NodeJS.Timeout | undefined;
  private lastChangeAt = 0;
  private readonly quietMs: number;
  private orphanTimer: NodeJS.Timeout | undefined;
  private liveWorkers = new Set<string>();

  private constructor(
    private readonly store: QueueStore,
    o: ActionQueueOptions,
  ) {
    this.owner = o.owner && !o.readOnly;
    this.quietMs = o.readOnly ? 0 : (o.quietCompactMs ?? QUIET_COMPACT_MS);
    this.clock = o.clock ?? Date;
    this.log = o.log ?? consoleLog;
    this.state = new QueueState({ completedLimit: o.completedLimit ?? 100, failedLimit: o.failedLimit ?? 100 });
  }

  static async open(opts: ActionQueueOptions): Promise<ActionQueue> {
    const log = opts.log ?? consoleLog;
    const store =
      opts.store ??
      new FileStore({ home: opts.home, owner: opts.owner, log, ...(opts.readOnly ? { readOnly: true } : {}), ...opts.fileStore });
    const q = new ActionQueue(store, opts);
    try {
      await q.init(opts);
    } catch (e) {
      await store.close().catch(() => {});
      throw e;
    }
    return q;
  }

  private async init(o: ActionQueueOptions): Promise<void> {
    const load = await this.store.load((c) => this.onStoreChange(c));
    this.problems.push(...load.problems);
    const now = this.now();
    this.state.reset(load.snapshot, now);
    for (const op of load.ops) this.state.apply(op, now);
    if (!this.owner) {
      // A shared store seen from a process that runs no runner (a gateway, the dashboard): which runners are alive
      // elsewhere, for "is an agent working on this queue".
      if (this.store.liveWorkers && !o.readOnly) {
        const refresh = () =>
          this.store.liveWorkers!()
            .then((live) => {
              this.liveWorkers = live;
            })
            .catch(() => {});
        await refresh();
        this.orphanTimer = setInterval(refresh, Math.max(100, Math.floor((this.store.leaseDurationMs ?? 15_000) / 2)));
        this.orphanTimer.unref();
      }
      return;
    }
    if (this.store.worker !== undefined) {
      // A shared store: other runners may be working right now. Only a dead runner's actions go back.
      await this.requeueOrphans();
      const every = Math.max(100, Math.floor((this.store.leaseDurationMs ?? 15_000) / 2));
      this.orphanTimer = setInterval(() => {
        this.requeueOrphans().catch((e) => this.log.warn(`Queue: looking for a dead runner's actions failed: ${errorMessage(e)}`));
      }, every);
      this.orphanTimer.unref();
    } else {
      // The previous runner died (or was stopped) mid-action: at-least-once delivery runs it again. Not a retry:
      // the action did not fail, its runner went away.
      const stuck = this.state.executingActions();
      if (stuck.length) {
        this.log.warn(
          `Queue: ${stuck.length} action(s) were executing when the previous runner stopped; they are pending again: ${stuck.map((a) => a.id).join(', ')}`,
        );
        await this.store.append(stuck.map((a) => ({ op: 'requeue', id: a.id })));
      }
    }
    if (this.store.wantsCompaction(this.state.active.size)) await this.compact();
  }

  /**
   * Shared stores: executing actions whose runner's lease is gone (killed, crashed, cut off for longer than its
   * lease) go back to pending, each stamped with the dead runner's id so that a runner that only paused cannot
   * settle it afterwards, and a second runner doing the same at the same time changes nothing.
   */
  private async requeueOrphans(): Promise<void> {
    if (this.closed || !this.store.liveWorkers) return;
    const live = await this.store.liveWorkers();
    this.liveWorkers = live;
    if (this.state.executing === 0) return;
    const ops: Array<Extract<QueueOp, { op: 'requeue' }>> = [];
    for (const a of this.state.executingActions()) {
      const by = this.state.executorOf(a.id);
      if (by !== undefined && live.has(by)) continue;
      ops.push(by === undefined ? { op: 'requeue', id: a.id } : { op: 'requeue', id: a.id, by });
    }
    if (ops.length === 0 || this.closed) return;
    this.log.warn(
      `Queue: ${ops.length} action(s) were executing on a runner that is gone; they are pending again: ${ops.map((o) => o.id).join(', ')}`,
    );
    await this.store.append(ops);
    this.afterWrite();
  }

  /** Shared stores: whether any process queued an action for this inbound chat message (see QueueApi.knowsInbound). */
  get knowsInbound(): ((channel: string, messageId: string) => Promise<boolean>) | undefined {
    const store = this.store;
    return store.knowsInbound ? (channel, messageId) => store.knowsInbound!(channel, messageId) : undefined;
  }

  /** Shared stores: this runner's id. */
  get worker(): string | undefined {
    return this.store.worker;
  }

  /** Shared stores: how many runners (on any machine) held a lease when this process last looked; undefined otherwise. */
  sharedRunners(): number | undefined {
    return this.store.liveWorkers ? this.liveWorkers.size : undefined;
  }

  /** Shared stores: whether the runner `worker` held a lease when this process last looked (this one always). */
  isWorkerAlive(worker: string): boolean {
    return worker === this.store.worker || this.liveWorkers.has(worker);
  }

  private now(): number {
    return this.clock.now();
  }

  private onStoreChange(c: StoreChange): void {
    const now = this.now();
    let changed = false;
    if (c.reset) {
      this.state.reset(c.reset, now);
      changed = true;
    }
    const stopped: Array<{ id: string; reason: string }> = [];
    for (const op of c.ops) {
      const applied = this.state.apply(op, now);
      if (applied && op.op === 'stop' && this.state.stopOf(op.id)) stopped.push(op);
      changed = applied || changed;
    }
    if (c.problems?.length) this.problems.push(...c.problems);
    if (changed) {
      this.noteChange();
      this.emit();
    }
    for (const { id, reason } of stopped) {
      for (const l of this.stopListeners) {
        try {
          l(id, reason);
        } catch (e) {
          this.log.error(`Queue: a stop listener threw: ${errorMessage(e)}`);
        }
      }
    }
  }

  private emit(): void {
    for (const l of this.listeners) {
      try {
        l();
      } catch (e) {
        this.log.error(`Queue: a change listener threw: ${errorMessage(e)}`);
      }
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new KeelError(ErrorCodes.QUEUE_CLOSED, 'The queue is closed; open it again to continue.');
  }

  private assertOwner(what: string): void {
    this.assertOpen();
    if (!this.owner) {
      throw new KeelError(
        ErrorCodes.QUEUE_NOT_OWNER,
        `Only the queue owner (the runner, \`keel run\`) may ${what} actions; this process opened the queue without owning it.`,
      );
    }
  }

  private executingOrThrow(id: string): Action {
    const a = this.state.active.get(id);
    if (!a) throw new KeelError(ErrorCodes.ACTION_NOT_FOUND, `No pending or executing action has id ${id}.`, { id });
    if (a.status !== 'executing') {
      throw new KeelError(
        ErrorCodes.ACTION_NOT_EXECUTING,
        `Action ${id} is ${a.status}, not executing: only a taken action can be settled.`,
        { id },
      );
    }
    const worker = this.store.worker;
    if (worker !== undefined && this.state.executorOf(id) !== worker) {
      throw new KeelError(
        ErrorCodes.ACTION_NOT_EXECUTING,
        `Action ${id} is no longer this runner's: its lease lapsed and another runner took the action over, so this result is not recorded.`,
        { id },
      );
    }
    return a;
  }

  /** Compacts in the background when the journal has grown enough; the pushes that triggered it are already durable. */
  private afterWrite(): void {
    this.noteChange();
    if (this.compacting || this.closed || this.now() - this.compactRefusedAt < COMPACT_RETRY_MS) return;
    if (!this.store.wantsCompaction(this.state.active.size)) return;
    this.compacting = true;
    this.compact()
      .catch((e) => this.log.error(`Queue: compaction failed (the journal keeps growing until it succeeds): ${errorMessage(e)}`))
      .finally(() => {
        this.compacting = false;
      });
  }

  /**
   * Arms the quiet-time compaction: once nothing changed for {@link QUIET_COMPACT_MS}, `actions.json` is rewritten
   * so that it shows the queue as it is. Costs a clock read per change, never a file write, so a push stays flat.
   */
  private noteChange(): void {
    const quiet = this.quietMs;
    if (this.closed || quiet <= 0) return;
    this.lastChangeAt = performance.now();
    if (this.quietTimer) return;
    const arm = (ms: number) => {
      this.quietTimer = setTimeout(() => {
        this.quietTimer = undefined;
        if (this.closed) return;
        const since = performance.now() - this.lastChangeAt;
        if (since < quiet) return arm(quiet - since);
        if (!this.store.stale?.()) return;
        if (this.compacting) return arm(quiet);
        this.compacting = true;
        this.compact()
          .catch((e) =>
            this.log.error(`Queue: quiet-time compaction failed (actions.journal still holds every change): ${errorMessage(e)}`),
          )
          .finally(() => {
            this.compacting = false;
          });
      }, ms);
      this.quietTimer.unref();
    };
    arm(quiet);
  }

  /** Validates, stores durably, then resolves with the queued action. Invalid input changes nothing. */
  async push(input: PushInput, options: PushOptions = {}): Promise<Action> {
    this.assertOpen();
    const now = this.now();
    const key = options.idempotencyKey;
    if (key !== undefined) {
      // A retried push with the same key is the first push's action (kept while the queue remembers it).
      for (const group of [this.state.active.values(), this.state.completed.values(), this.state.failed.values()])
        for (const a of group) if (a.metadata.idempotencyKey === key) return copy(a);
      input = { ...input, metadata: { ...input.metadata, idempotencyKey: key } };
    }
    let action = createAction(input, now);
    // Ids are random; a clash would make the push look like a replay and vanish, so draw again.
    while (this.state.get(action.id)) action = createAction(input, now);
    await this.store.append([{ op: 'push', action }]);
    this.afterWrite();
    return copy(action);
  }

  /**
   * Takes in an action as it is, id included (moving a home's file queue into a shared queue): pending again,
   * its retries and metadata kept. An id the queue knows already is left alone, so doing it twice is harmless.
   */
  async adopt(action: Action): Promise<void> {
    this.assertOpen();
    if (this.state.get(action.id)) return;
    await this.store.append([{ op: 'push', action: { ...action, status: 'pending', metadata: { ...action.metadata } } }]);
    this.afterWrite();
  }

  /**
   * The next action to run: highest priority first, first-in first-out within a priority, skipping actions held
   * back until their notBefore. Marks it executing. Actions whose TTL passed are removed on the way, not returned.
   * `busy` names lanes to leave alone (the runner's lanes that already run an action; see lanes.ts). `accept`, when
   * given, passes over actions this runner must not run (they keep their place for another runner).
   */
  async take(busy?: (lane: string) => boolean, accept?: (action: Action) => boolean): Promise<Action | undefined> {
    this.assertOwner('take');
    const by = this.store.worker;
    for (;;) {
      const now = this.now();
      const ops: QueueOp[] = [];
      const shifted: Action[] = [];
      const passed: Action[] = [];
      let next: Action | undefined;
      for (let a = this.state.pending.shift(now, busy); a; a = this.state.pending.shift(now, busy)) {
        if (expiresAt(a) <= now) {
          shifted.push(a);
          ops.push({ op: 'remove', id: a.id, reason: 'ttl expired' });
          continue;
        }
        if (accept && !accept(a)) {
          passed.push(a);
          continue;
        }
        shifted.push(a);
        next = a;
        ops.push(by === undefined ? { op: 'start', id: a.id } : { op: 'start', id: a.id, by });
        break;
      }
      // Passed over: back in front, in the order they were in.
      for (let i = passed.length - 1; i >= 0; i--) this.state.pending.add(passed[i]!, now, true);
      if (ops.length === 0) return undefined;
      try {
        await this.store.append(ops);
      } catch (e) {
        // Not recorded, so not taken: put them back (at the back of their priority; only on an I/O error).
        for (const a of shifted) if (this.state.active.get(a.id) === a && a.status === 'pending') this.state.pending.add(a, this.now());
        throw e;
      }
      this.afterWrite();
      if (!next) return undefined;
      // Another process may have removed it, or (a shared store) another runner's claim came first; then look again.
      if (this.state.active.get(next.id) === next && next.status === 'executing' && this.state.executorOf(next.id) === by)
        return copy(next);
    }
  }

  /** Settles a taken action as completed with its final answer. */
  async complete(id: string, result: string): Promise<void> {
    this.assertOwner('complete');
    this.executingOrThrow(id);
    const by = this.store.worker;
    await this.store.append([{ op: 'complete', id, result, at: this.now(), ...(by === undefined ? {} : { by }) }]);
    this.afterWrite();
  }

  /**
   * Settles a taken action that failed: back to pending after a backoff while retries are left (1 s, 2 s, 4 s),
   * else into the failed group. A retry that could only start once the action's TTL is over counts as none left:
   * the action fails now, with its error, instead of waiting for the TTL to remove it without a trace.
   */
  async fail(id: string, error: string): Promise<'retry' | 'failed'> {
    this.assertOwner('fail');
    const a = this.executingOrThrow(id);
    const now = this.now();
    const { retries, maxRetries } = a.metadata;
    const stamp = this.store.worker === undefined ? {} : { by: this.store.worker };
    const notBefore = now + backoffMs(retries + 1);
    // Stopped by the operator: failed for good, whatever retries it has left.
    const retry = retries < maxRetries && !this.state.stopOf(id);
    const inTime = notBefore < expiresAt(a);
    const op: QueueOp =
      retry && inTime
        ? { op: 'retry', id, retries: retries + 1, notBefore, error, ...stamp }
        : {
            op: 'fail',
            id,
            error: retry ? `${error} (not retried: the next retry would start after the action's TTL of ${a.metadata.ttl} ms)` : error,
            at: now,
            ...stamp,
          };
    await this.store.append([op]);
    this.afterWrite();
    // A stop that reached the journal first turns the retry into a failure (state.ts): say what happened.
    return op.op === 'retry' && this.state.get(id)?.status !== 'failed' ? 'retry' : 'failed';
  }

  /**
   * Changes the task and metadata of an action that still waits, in place: its id, priority, schedule, retries and
   * place in line are kept. Resolves true when the change was applied (it was still pending when its op was
   * written), false otherwise (unknown, started or settled): nothing changed then. An empty task is an error.
   */
  async amend(id: string, change: { task: string; metadata?: Record<string, unknown> }): Promise<boolean> {
    this.assertOpen();
    if (typeof change.task !== 'string' || !change.task.trim())
      throw new KeelError(ErrorCodes.TASK_EMPTY, 'The task is empty: give the instruction to carry out as text.');
    const a = this.state.get(id);
    if (!a || a.status !== 'pending') return false;
    const metadata = { ...a.metadata, ...(change.metadata ?? {}) } as Action['metadata'];
    await this.store.append([{ op: 'amend', id, task: change.task, metadata }]);
    this.afterWrite();
    const now = this.state.get(id);
    return now !== undefined && now.task === change.task;
  }

  /** Removes an action from wherever it is. Resolves false when no action has that id. */
  async remove(id: string, reason: string): Promise<boolean> {
    this.assertOpen();
    if (!this.state.get(id)) return false;
    await this.store.append([{ op: 'remove', id, reason }]);
    this.afterWrite();
    return true;
  }

  /**
   * Stops an executing action, whichever process or machine runs it: a `stop` op is recorded, the runner holding
   * the action aborts it when it sees the op (see `onStop`), and it ends failed with `reason`, never retried; if
   * its runner is gone, the requeue that would run it again fails it instead. Any process may call it. Resolves
   * false when the action is not executing (unknown, pending, settled) or was stopped already: nothing is written.
   */
  async stop(id: string, reason: string): Promise<boolean> {
    this.assertOpen();
    const a = this.state.get(id);
    if (!a || a.status !== 'executing' || this.state.stopOf(id)) return false;
    await this.store.append([{ op: 'stop', id, reason, at: this.now() }]);
    this.afterWrite();
    return true;
  }

  /** Why the operator stopped this executing action (its runner is aborting it); undefined when nobody did. */
  stopReason(id: string): string | undefined {
    return this.state.stopOf(id)?.reason;
  }

  /**
   * Called with each action the operator stopped, here or in another process, once that `stop` is applied: the
   * runner aborts the action if it runs it.
   */
  onStop(listener: (id: string, reason: string) => void): () => void {
    this.stopListeners.add(listener);
    return () => {
      this.stopListeners.delete(listener);
    };
  }

  /** Removes pending and failed actions whose TTL (from createdAt) has passed; resolves with what it removed. */
  async sweep(): Promise<Action[]> {
    this.assertOpen();
    const now = this.now();
    const expired: Action[] = [];
    for (const a of this.state.active.values()) if (a.status === 'pending' && expiresAt(a) <= now) expired.push(copy(a));
    for (const a of this.state.failed.values()) if (expiresAt(a) <= now) expired.push(copy(a));
    if (expired.length === 0) return [];
    await this.store.append(expired.map((a) => ({ op: 'remove', id: a.id, reason: 'ttl expired' })));
    this.afterWrite();
    return expired;
  }

  get(id: string): Action | undefined {
    const a = this.state.get(id);
    return a && copy(a);
  }

  async fetch(id: string): Promise<Action | undefined> {
    return this.get(id);
  }

  list(): QueueList {
    const s = this.state.snapshot(this.now());
    return {
      pending: s.actions.map(copy),
      completed: s.completed.reverse().map(copy),
      failed: s.failed.reverse().map(copy),
    };
  }

  counts(): QueueCounts {
    return {
      pending: this.state.active.size,
      executing: this.state.executing,
      completed: this.state.completed.size,
      failed: this.state.failed.size,
    };
  }

  /** When the next action can be taken (epoch ms; now if one is due already), or undefined when none waits. */
  nextDueAt(busy?: (lane: string) => boolean): number | undefined {
    return this.state.pending.nextDueAt(this.now(), busy);
  }

  /** Called after the state changed, here or in another process (once that change is picked up). */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Folds the journal into a new snapshot now. False when this process may not (a non-owner while the owner runs). */
  async compact(): Promise<boolean> {
    const done = await this.store.compact(() => this.state.snapshot(this.now()));
    if (!done) this.compactRefusedAt = this.now();
    return done;
  }

  /** Waits for writes in flight, compacts when allowed, releases the files. Executing actions stay executing. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.quietTimer) clearTimeout(this.quietTimer);
    if (this.orphanTimer) clearInterval(this.orphanTimer);
    try {
      await this.store.compact(() => this.state.snapshot(this.now()));
    } catch (e) {
      this.log.error(`Queue: compaction at close failed; the journal still holds every change: ${errorMessage(e)}`);
    }
    await this.store.close();
    this.listeners.clear();
    this.stopListeners.clear();
  }
}

/**
 * A runner on a shared queue (queueRedisUrl) moves what still waits in its home's file queue (from before the switch)
 * into it, so nothing queued there is stranded: each action pushed with its id, then removed from the file queue.
 * A crash in between moves it again, which the shared queue ignores (same id). Returns how many moved.
 */
export async function moveFileQueueInto(shared: QueueEngine, home: string, log: Logger): Promise<number> {
  const { existsSync } = await import('node:fs');
  const { queuePaths } = await import('./journal-file.js');
  const paths = queuePaths(home);
  if (!existsSync(paths.snapshot) && !existsSync(paths.journal)) return 0;
  const file = await ActionQueue.open({ home, owner: false, log, quietCompactMs: 0 });
  try {
    const waiting = file.list().pending;
    for (const a of waiting) {
      await shared.adopt(a);
      await file.remove(a.id, 'moved to the shared queue (queueRedisUrl)');
    }
    if (waiting.length) log.info(`Queue: moved ${waiting.length} action(s) that waited in this home's file queue to the shared queue.`);
    return waiting.length;
  } finally {
    await file.close();
  }
}

/** The queue as stored in `home` (or in the shared backend), read once without taking part (nothing written). */
export async function readQueueList(home: string, log?: Logger, backend: QueueBackend = {}): Promise<QueueList> {
  const q = await openQueue({ home, owner: false, readOnly: true, ...(log ? { log } : {}), ...backend });
  try {
    return q.list();
  } finally {
    await q.close();
  }
}

export type CancelOutcome = 'removed' | 'stopping' | 'settled' | 'unknown';

/**
 * Cancels action `id` from any process: a pending one is removed (`removed`, with the action as it was), an
 * executing one is stopped wherever it runs (`stopping`: the stop op of `ActionQueue.stop`), a settled one is left
 * as it is (`settled`). What the kernel's `ctx.queue.cancel` and `keel cancel` both do.
 */
export async function cancelAction(q: QueueEngine, id: string, reason: string): Promise<{ outcome: CancelOutcome; action?: Action }> {
  const a = await q.fetch(id);
  if (!a) return { outcome: 'unknown' };
  if (a.status === 'completed' || a.status === 'failed') return { outcome: 'settled', action: a };
  if (a.status === 'executing') {
    if ((await q.stop(id, reason)) || q.stopReason(id) !== undefined) return { outcome: 'stopping', action: a };
    // It settled or went back to pending meanwhile.
    const now = await q.fetch(id);
    if (!now) return { outcome: 'unknown' };
    if (now.status !== 'pending') return { outcome: now.status === 'executing' ? 'stopping' : 'settled', action: now };
  }
  return (await q.remove(id, reason)) ? { outcome: 'removed', action: a } : { outcome: 'unknown' };
}

export async function readQueueCounts(home: string, log?: Logger, backend: QueueBackend = {}): Promise<QueueCounts> {
  const q = await openQueue({ home, owner: false, readOnly: true, ...(log ? { log } : {}), ...backend });
  try {
    return q.counts();
  } finally {
    await q.close();
  }
}

/** Where a queue lives when it is not in `home`'s files: a shared queue on BullMQ (queueRedisUrl). */
export interface QueueBackend {
  redis?: SharedQueueOptions | undefined;
}

export type OpenQueueOptions = ActionQueueOptions & QueueBackend;

/** The queue for these options: BullMQ on Redis when `redis` is given, else the file queue in `home`. */
export async function openQueue(o: OpenQueueOptions): Promise<QueueEngine> {
  if (!o.redis) return ActionQueue.open(o);
  const { BullQueue } = await import('./bull-queue.js');
  return BullQueue.open({
    ...o.redis,
    owner: o.owner,
    ...(o.readOnly ? { readOnly: true } : {}),
    ...(o.log ? { log: o.log } : {}),
    ...(o.clock ? { clock: o.clock } : {}),
    ...(o.completedLimit !== undefined ? { completedLimit: o.completedLimit } : {}),
    ...(o.failedLimit !== undefined ? { failedLimit: o.failedLimit } : {}),
  });
}
