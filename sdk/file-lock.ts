/**
 * A cross-process mutex on a lock file: `open(O_CREAT|O_EXCL)` with `<pid> <token>` inside.
 *
 * Node has no flock(), and the processes sharing a KEEL_HOME (the agent, a separate gateway, `keel push`,
 * `keel config`) are separate, so the lock lives in the file system. A holder that died leaves its file behind; a
 * waiter breaks such a stale lock, but only inside a second, short-lived `.break` lock and only if the file still
 * holds the very content it saw as stale, so two waiters can never both break and then both believe they hold it.
 * Waiters in the same process queue on the same file, so one lock serves both kinds of concurrency.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { PluginError } from './errors.js';
import { isPidAlive } from './pid.js';

export interface FileLockOptions {
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** What the lock guards, for the error when it stays taken ("token usage summary"). */
  what?: string;
  /** The error to throw when it stays taken (default: `KEEL_E_FILE_LOCKED` naming `what`, the file and its holder). */
  onTimeout?(info: { path: string; holder: string; timeoutMs: number }): Error;
}

export interface HeldFileLock {
  release(): void;
}

/** A file created but not yet filled in is this old before we treat its creator as dead. */
const EMPTY_LOCK_GRACE_MS = 5_000;

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

/**
 * The contents of the locks this process holds now, shared by every copy of this module loaded in the process. A
 * lock that names this process's pid but is not among them was left by an earlier process that had the same pid
 * (a container's pid 1 killed and started again): its holder is gone.
 */
const held: Set<string> = ((globalThis as { [k: symbol]: Set<string> | undefined })[Symbol.for('keel.fileLocks')] ??= new Set());

/** Content of a lock whose holder is gone, or undefined when the lock is live (or already gone). */
function staleContent(path: string): string | undefined {
  const content = readOrUndefined(path);
  if (content === undefined) return undefined;
  const pid = Number.parseInt(content, 10);
  if (Number.isNaN(pid)) return ageMs(path) > EMPTY_LOCK_GRACE_MS ? content : undefined;
  if (pid === process.pid) return held.has(content) ? undefined : content;
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
  // Held from the moment the file exists (a waiter of this process that reads it before it is filled in must see
  // a live lock).
  held.add(content);
  try {
    writeSync(fd, content);
  } catch (e) {
    held.delete(content);
    closeSync(fd);
    unlinkQuiet(path);
    throw e;
  }
  closeSync(fd);
  return true;
}

/** Lets go of a lock this process holds. */
function releaseHeld(path: string, content: string): void {
  held.delete(content);
  unlinkQuiet(path);
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
  const mine = `${process.pid} ${randomBytes(6).toString('hex')}\n`;
  if (!tryCreate(breakPath, mine)) {
    // The breaker holds it for a few syscalls only; one left behind belongs to a process that died in there.
    if (staleContent(breakPath) !== undefined) unlinkQuiet(breakPath);
    return;
  }
  try {
    if (readOrUndefined(path) === seen) unlinkQuiet(path);
  } finally {
    releaseHeld(breakPath, mine);
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Waits for the lock file at `path` (its directory must exist) and takes it.
 * @example const lock = await acquireFileLock(`${file}.lock`); try { edit(file); } finally { lock.release(); }
 */
export async function acquireFileLock(path: string, opts: FileLockOptions = {}): Promise<HeldFileLock> {
  const content = `${process.pid} ${randomBytes(6).toString('hex')}\n`;
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  for (let attempt = 0; !tryCreate(path, content); attempt++) {
    const ms = nextWait(path, attempt, deadline, opts.timeoutMs ?? 10_000, opts);
    if (ms) await sleep(ms);
  }
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      releaseHeld(path, content);
    },
  };
}

/**
 * After a failed try: breaks a lock whose holder died (0: try again at once), throws past the deadline, else the
 * milliseconds to wait (jittered, so several waiting processes do not retry in lock-step).
 */
function nextWait(path: string, attempt: number, deadline: number, timeoutMs: number, opts: FileLockOptions): number {
  if (attempt % 4 === 3) {
    const stale = staleContent(path);
    if (stale !== undefined) {
      breakStale(path, stale);
      return 0;
    }
  }
  if (Date.now() > deadline) {
    const holder = readOrUndefined(path)?.trim() ?? 'unknown';
    throw opts.onTimeout ? opts.onTimeout({ path, holder, timeoutMs }) : lockedError(path, holder, timeoutMs, opts.what);
  }
  return Math.min(8, 1 + (attempt >> 3)) + Math.random();
}

/**
 * Runs `fn` holding the lock file at `path`: one at a time across Keel's processes and within this one.
 * @example await withFileLock(`${summary}.lock`, () => update(summary), { what: 'token usage summary' });
 */
export async function withFileLock<T>(path: string, fn: () => Promise<T> | T, opts?: FileLockOptions): Promise<T> {
  const lock = await acquireFileLock(path, opts);
  try {
    return await fn();
  } finally {
    lock.release();
  }
}

/** Blocks this thread for `ms` (a synchronous caller waiting its turn for a lock held a few milliseconds). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * `withFileLock` for synchronous critical sections (a read, change and atomic write of a small file): the wait, if
 * another process holds the lock for its few milliseconds, blocks this thread. Default timeout 5 s.
 * @example store.update = (fn) => withFileLockSync(`${file}.lock`, () => write(fn(read())), { what: 'schedules' });
 */
export function withFileLockSync<T>(path: string, fn: () => T, opts: FileLockOptions = {}): T {
  const content = `${process.pid} ${randomBytes(6).toString('hex')}\n`;
  const deadline = Date.now() + (opts.timeoutMs ?? 5_000);
  for (let attempt = 0; !tryCreate(path, content); attempt++) {
    const ms = nextWait(path, attempt, deadline, opts.timeoutMs ?? 5_000, opts);
    if (ms) sleepSync(ms);
  }
  try {
    return fn();
  } finally {
    releaseHeld(path, content);
  }
}

function lockedError(path: string, holder: string, timeoutMs: number, what = 'file'): PluginError {
  return new PluginError(
    'KEEL_E_FILE_LOCKED',
    `The ${what} is locked by another process (lock ${path}, holder "${holder}") for more than ${timeoutMs} ms. ` +
      'If no keel process is running, delete that file.',
  );
}
