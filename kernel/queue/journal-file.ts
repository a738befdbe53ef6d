/**
 * File-level helpers for the journal, shared by the store and by the `keel push` fast path (node built-ins and kernel/util only).
 */
import { randomBytes } from 'node:crypto';
import { fsyncDir, writeFileAtomicSync } from '../util/atomic-write.js';
import { constants, copyFileSync, fdatasyncSync, fstatSync, ftruncateSync, openSync, readSync, renameSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { encodeHeader } from './ops.js';

export interface QueuePaths {
  home: string;
  snapshot: string;
  snapshotBak: string;
  journal: string;
  journalBak: string;
  lock: string;
  owner: string;
}

export function queuePaths(dir: string): QueuePaths {
  const home = resolve(dir);
  return {
    home,
    snapshot: join(home, 'actions.json'),
    snapshotBak: join(home, 'actions.json.bak'),
    journal: join(home, 'actions.journal'),
    journalBak: join(home, 'actions.journal.bak'),
    lock: join(home, 'actions.lock'),
    owner: join(home, 'queue.owner'),
  };
}

export function newJournalId(): string {
  return randomBytes(9).toString('base64url');
}

export { fsyncDir };

/** Writes `data` to `path` atomically: temp file, fsync, rename, fsync of the directory. */
export function writeFileAtomic(path: string, _dir: string, data: string | Buffer): void {
  writeFileAtomicSync(path, data);
}

/**
 * Replaces `to` with a copy of `path`. Used for `.bak` files: a copy, not a hard link, because a link would
 * share the damage when someone edits the original in place.
 */
export function copyFileAtomic(path: string, to: string): void {
  const tmp = `${to}.tmp-${process.pid}`;
  copyFileSync(path, tmp);
  renameSync(tmp, to);
}

/** Creates (or replaces) the journal with a fresh header. Caller holds the queue lock. Returns the new id. */
export function createJournal(paths: QueuePaths): string {
  const id = newJournalId();
  writeFileAtomic(paths.journal, paths.home, encodeHeader(id));
  return id;
}

/** Opens the journal for appending, creating it when absent. Caller holds the queue lock. */
export function openJournalAppend(paths: QueuePaths): number {
  let fd: number;
  try {
    fd = openSync(paths.journal, constants.O_RDWR | constants.O_APPEND);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    createJournal(paths);
    fd = openSync(paths.journal, constants.O_RDWR | constants.O_APPEND);
  }
  ensureHeader(fd);
  return fd;
}

/** An empty journal (made by `touch`, say) gets its header before any op, or the ops would read as corrupt. */
export function ensureHeader(fd: number): void {
  if (fstatSync(fd).size === 0) appendDurableSync(fd, Buffer.from(encodeHeader(newJournalId())));
}

/**
 * A writer killed in the middle of write() leaves a line without its newline. That op was never acknowledged
 * (acknowledgement comes after fdatasync), so it is cut off before anything is appended behind it; otherwise the
 * next op would be glued to the torn one and both would be lost. Caller holds the lock. Returns the size after.
 */
export function cutTornTail(fd: number): number {
  const size = fstatSync(fd).size;
  if (size === 0) return 0;
  const one = Buffer.alloc(1);
  readSync(fd, one, 0, 1, size - 1);
  if (one[0] === 0x0a) return size;
  const chunk = Buffer.alloc(64 * 1024);
  let end = size;
  while (end > 0) {
    const start = Math.max(0, end - chunk.length);
    const n = readSync(fd, chunk, 0, end - start, start);
    const nl = chunk.subarray(0, n).lastIndexOf(0x0a);
    if (nl >= 0) {
      ftruncateSync(fd, start + nl + 1);
      return start + nl + 1;
    }
    end = start;
  }
  // Not even a whole header: leave it for the loader to report rather than destroy it.
  return size;
}

/** Appends and waits until the bytes are on disk: this is the acknowledgement point of a push. */
export function appendDurableSync(fd: number, buf: Buffer): void {
  let off = 0;
  while (off < buf.length) off += writeSync(fd, buf, off, buf.length - off);
  fdatasyncSync(fd);
}
