/**
 * The seam under the action queue: what the kernel, the runner and the CLI need of a queue, whichever engine keeps
 * it. Two engines implement it: the file queue in KEEL_HOME (queue.ts, the embedded default for one machine) and
 * BullMQ on Redis (bull-queue.ts, when queueRedisUrl is set, for several runners on several machines).
 *
 * The seam is at the level of actions (push, take, settle, cancel, list), not of a journal: BullMQ is not an op log.
 */
import type { Action, PushInput } from '../../sdk/types.js';

export interface QueueList {
  /** Executing first, then pending in run order. */
  pending: Action[];
  /** Newest first. */
  completed: Action[];
  /** Newest first. */
  failed: Action[];
}

export interface QueueCounts {
  /** Waiting and executing (as in `list().pending`). */
  pending: number;
  executing: number;
  completed: number;
  failed: number;
}

export interface PushOptions {
  /**
   * A retried push with the same key (within 24 hours) is the same action: the first push's action is returned and
   * nothing new is queued (CLI `keel push --key`, REST header `Idempotency-Key`).
   */
  idempotencyKey?: string;
}

export interface QueueEngine {
  /** Corruption or refused data found while opening or reading (also logged). */
  readonly problems: string[];
  /** Whether this process takes and settles actions (a runner). */
  readonly owner: boolean;
  /** Shared engines: this runner's id (undefined for the file queue, and for a process without a runner). */
  readonly worker: string | undefined;
  /** Shared engines: whether an action was queued for this inbound chat message, on any machine. */
  readonly knowsInbound: ((channel: string, messageId: string) => Promise<boolean>) | undefined;
  /** Shared engines: how many runners hold a lease (undefined for the file queue). */
  sharedRunners(): number | undefined;
  /** Shared engines: whether runner `worker` held a lease when this process last looked. */
  isWorkerAlive(worker: string): boolean;
  push(input: PushInput, options?: PushOptions): Promise<Action>;
  /** Takes in an action as it is, id included (moving a file queue into a shared one); a known id is left alone. */
  adopt(action: Action): Promise<void>;
  take(busy?: (lane: string) => boolean, accept?: (action: Action) => boolean): Promise<Action | undefined>;
  complete(id: string, result: string): Promise<void>;
  fail(id: string, error: string): Promise<'retry' | 'failed'>;
  amend(id: string, change: { task: string; metadata?: Record<string, unknown> }): Promise<boolean>;
  remove(id: string, reason: string): Promise<boolean>;
  stop(id: string, reason: string): Promise<boolean>;
  stopReason(id: string): string | undefined;
  onStop(listener: (id: string, reason: string) => void): () => void;
  sweep(): Promise<Action[]>;
  /** What this process knows of action `id` now (a shared engine: what it pushed, ran or heard of). */
  get(id: string): Action | undefined;
  /** The action as stored now, asked of the engine itself. */
  fetch(id: string): Promise<Action | undefined>;
  list(): QueueList;
  counts(): QueueCounts;
  nextDueAt(busy?: (lane: string) => boolean): number | undefined;
  onChange(listener: () => void): () => void;
  compact(): Promise<boolean>;
  close(): Promise<void>;
}
