/**
 * A cross-process mutex on a lock file: `open(O_CREAT|O_EXCL)` with `<pid> <token>` inside.
 *
 * Node has no flock(), and the processes sharing a KEEL_HOME (runner, `keel push`, gateway) are separate, so the
 * lock lives in the file system. A holder that died leaves its file behind; a waiter breaks such a stale lock,
 * but only inside a second, short-lived `.break` lock and only if the file still holds the very content it saw
 * as stale, so two waiters can never both break and then both believe they hold the lock.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { ErrorCodes, KeelError } from '../errors.js';
import { isPidAlive } from '../util/pid.js';

export interface LockOptions {
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** What the lock guards, for the error when it is held too long (default "queue"; other locks: FILE_LOCKED). */
  what?: string;
}

export interface HeldLock {
  release(): void;
}

/** A file created but not yet filled in is this old before we treat its creator as dead. */
const EMPTY_LOCK_GRACE_MS = 5_000;

export { isPidAlive };

function readOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

function ageMs(path: string): number {
  try {
    return Date.now() - statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

/** Content of a lock whose holder is gone, or undefined when the lock is live (or already gone). */
function staleContent(path: string): string | undefined {
  const content = readOrUndefined(path);
  if (content === undefined) return undefined;
  const pid = Number.parseInt(content, 10);
  if (Number.isNaN(pid)) return ageMs(path) > EMPTY_LOCK_GRACE_MS ? content : undefined;
  return isPidAlive(pid) ? undefined : content;
}

function tryCreate(path: string, content: string): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
  try {
    writeSync(fd, content);
  } finally {
    closeSync(fd);
  }
  return true;
}

function unlinkQuiet(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // already gone
  }
}

function breakStale(path: string, seen: string): void {
  const breakPath = `${path}.break`;
  if (!tryCreate(breakPath, `${process.pid}\n`)) {
    // The breaker holds it for a few syscalls only; one left behind belongs to a process that died in there.
    if (staleContent(breakPath) !== undefined) unlinkQuiet(breakPath);
    return;
  }
  try {
    if (readOrUndefined(path) === seen) unlinkQuiet(path);
  } finally {
    unlinkQuiet(breakPath);
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Waits for the lock file at `path`; the directory must exist. */
export async function acquireLock(path: string, opts: LockOptions = {}): Promise<HeldLock> {
  const content = `${process.pid} ${randomBytes(6).toString('hex')}\n`;
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  for (let attempt = 0; ; attempt++) {
    if (tryCreate(path, content)) {
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          unlinkQuiet(path);
        },
      };
    }
    if (attempt % 4 === 3) {
      const stale = staleContent(path);
      if (stale !== undefined) {
        breakStale(path, stale);
        continue;
      }
    }
    if (Date.now() > deadline) {
      const holder = readOrUndefined(path)?.trim() ?? 'unknown';
      throw new KeelError(
        opts.what === undefined ? ErrorCodes.QUEUE_LOCKED : ErrorCodes.FILE_LOCKED,
        `The ${opts.what ?? 'queue'} is locked by another process (lock ${path}, holder "${holder}") for more than ${opts.timeoutMs ?? 10_000} ms. ` +
          'If no keel process is running, delete that file.',
        { path, holder },
      );
    }
    // Jitter keeps several waiting processes from retrying in lock-step.
    await sleep(Math.min(8, 1 + (attempt >> 3)) + Math.random());
  }
}

export async function withLock<T>(path: string, fn: () => Promise<T> | T, opts?: LockOptions): Promise<T> {
  const lock = await acquireLock(path, opts);
  try {
    return await fn();
  } finally {
    lock.release();
  }
}
