/**
 * Where the queue keeps its state. The default is the file store (snapshot + journal in KEEL_HOME); the interface
 * is kept to what a shared backend such as Redis/BullMQ could also provide: a base state plus an ordered stream
 * of ops, durable appends, and a way to fold the stream back into the base.
 */
import type { Action } from '../../sdk/types.js';
import type { QueueOp } from './ops.js';

export type { QueueOp } from './ops.js';

/** The queue's state as stored. `actions` holds pending (in run order) and executing actions. */
export interface QueueSnapshot {
  actions: Action[];
  completed: Action[];
  failed: Action[];
  /** Shared stores: the runner holding each executing action (by action id). */
  executors?: Record<string, string>;
  /** Executing actions the operator stopped, not yet settled (by action id): the reason and when. */
  stops?: Record<string, { reason: string; at: number }>;
}

export interface StoreLoad {
  snapshot: QueueSnapshot;
  /** Ops recorded after the snapshot, oldest first, to be replayed on top of it. */
  ops: QueueOp[];
  /** Corruption and recovery notes a human should read (also logged by the store). */
  problems: string[];
}

/**
 * Ops to apply to the in-memory state, in journal order: this process's own once they are durable, and other
 * processes' as they are picked up. `reset` first replaces the whole state (the base was rewritten elsewhere, e.g.
 * the owner compacted while this process only watches).
 */
export interface StoreChange {
  reset?: QueueSnapshot;
  ops: QueueOp[];
  /** Corruption found while reading them, for a human. */
  problems?: string[];
}

export interface QueueStore {
  /**
   * Reads the durable state, then keeps `onChange` informed until close. Called once, before anything else.
   * Routing every op (own ones included) through `onChange` keeps memory in the same order as the journal.
   */
  load(onChange: (change: StoreChange) => void): Promise<StoreLoad>;
  /**
   * Makes `ops` durable, in order, after everything appended before, hands them to `onChange`, then resolves.
   * Concurrent calls may share one physical write.
   */
  append(ops: QueueOp[]): Promise<void>;
  /**
   * Folds the ops recorded so far into a new base built from `snapshot()` (called once the store has caught up
   * with everyone else's ops). Returns false when this process may not compact now.
   */
  compact(snapshot: () => QueueSnapshot): Promise<boolean>;
  /** Whether the op stream has grown enough, against `liveActions` in the base, that compacting pays off. */
  wantsCompaction(liveActions: number): boolean;
  /** Whether the base lags behind the op stream (or is missing): the quiet-time compaction then brings it up to date. */
  stale?(): boolean;
  /**
   * Shared stores (several runners): this runner's id, stamped on its claims and settles. Absent for a store with
   * one runner per home (the file store).
   */
  readonly worker?: string | undefined;
  /** Shared stores: the runners whose lease is alive. */
  liveWorkers?(): Promise<Set<string>>;
  /** Shared stores: whether an action was pushed for this inbound chat message (recorded with its push). */
  knowsInbound?(channel: string, messageId: string): Promise<boolean>;
  /** Shared stores: how long a runner's lease lasts (how often to look for a dead runner's actions). */
  readonly leaseDurationMs?: number;
  close(): Promise<void>;
}
