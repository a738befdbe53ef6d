/**
 * The action queue: durable priority queue with retries, backoff, TTL and bounded history (SPEC "Action").
 * `keel push` should import `./append.js` directly rather than this index, to stay light.
 */
export {
  createAction,
  DEFAULT_MAX_RETRIES,
  DEFAULT_PRIORITY,
  DEFAULT_TTL_MS,
  expiresAt,
  newActionId,
  normalizePriority,
  truncateForLog,
} from './action.js';
export { appendPush } from './append.js';
export { FileStore, type FileStoreOptions } from './file-store.js';
export { queuePaths, type QueuePaths } from './journal-file.js';
export { acquireLock, isPidAlive, type HeldLock, type LockOptions, withLock } from './lock.js';
export type { JournalHeader, QueueOp } from './ops.js';
export { laneOf, MAIN_LANE } from './lanes.js';
export { isOwnerAlive, ownerPid } from './owner.js';
export {
  ActionQueue,
  type ActionQueueOptions,
  backoffMs,
  cancelAction,
  type CancelOutcome,
  openQueue,
  type OpenQueueOptions,
  type QueueBackend,
  type QueueCounts,
  type QueueList,
  readQueueCounts,
  readQueueList,
} from './queue.js';
export type { PushOptions, QueueEngine } from './engine.js';
export type { QueueSnapshot, QueueStore, StoreChange, StoreLoad } from './store.js';
