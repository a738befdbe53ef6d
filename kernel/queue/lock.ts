/**
 * The queue's cross-process mutex: the SDK's lock file (sdk/file-lock.ts, shared with plugins), with the kernel's
 * coded errors (`KEEL_E_QUEUE_LOCKED` for the queue, `KEEL_E_FILE_LOCKED` for another file named by `what`).
 */
import { acquireFileLock, type FileLockOptions, type HeldFileLock, withFileLock } from '../../sdk/file-lock.js';
import { ErrorCodes, KeelError } from '../errors.js';
import { isPidAlive } from '../util/pid.js';

export interface LockOptions {
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** What the lock guards, for the error when it is held too long (default "queue"; other locks: FILE_LOCKED). */
  what?: string;
}

export type HeldLock = HeldFileLock;

export { isPidAlive };

/** The SDK lock's options with the kernel's coded error. */
function withKernelError(opts: LockOptions): FileLockOptions {
  return {
    ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
    onTimeout: ({ path, holder, timeoutMs }) =>
      new KeelError(
        opts.what === undefined ? ErrorCodes.QUEUE_LOCKED : ErrorCodes.FILE_LOCKED,
        `The ${opts.what ?? 'queue'} is locked by another process (lock ${path}, holder "${holder}") for more than ${timeoutMs} ms. ` +
          'If no keel process is running, delete that file.',
        { path, holder },
      ),
  };
}

/** Waits for the lock file at `path`; the directory must exist. */
export function acquireLock(path: string, opts: LockOptions = {}): Promise<HeldLock> {
  return acquireFileLock(path, withKernelError(opts));
}

export function withLock<T>(path: string, fn: () => Promise<T> | T, opts: LockOptions = {}): Promise<T> {
  return withFileLock(path, fn, withKernelError(opts));
}
