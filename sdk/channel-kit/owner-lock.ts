/**
 * "Who owns this connection": a lock file under `$KEEL_HOME/channels/<name>/` named after a hash of the
 * credential, holding the owner's pid. A second Keel process on the same bot token waits instead of polling at the
 * same time (Telegram would answer both with 409 Conflict and split the updates). A lock whose pid is gone is
 * taken over. Across machines (a queue shared through Redis) the Redis lease in lease.ts takes its place.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, openSync, readFileSync, renameSync, unlinkSync, writeSync, closeSync, fsyncSync } from 'node:fs';
import { join } from 'node:path';
import { isPidAlive } from '../pid.js';

/**
 * `ownerHost`: where the holder runs, when it is known and may be another machine (a Redis lease). `why`: the lock
 * could not be checked at all (the lease's Redis is unreachable); the channel waits and tries again.
 */
export type LockResult = { ok: true } | { ok: false; ownerPid: number; ownerHost?: string; why?: string };

/**
 * @example
 * const lock = new OwnerLock(ctx.home, 'chatA', token);
 * const r = lock.acquire(); if (!r.ok) log.warn(`bot polled by pid ${r.ownerPid}`);
 */
export class OwnerLock {
  readonly file: string;

  constructor(home: string, channel: string, credential: string) {
    const dir = join(home, 'channels', channel);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    // The file name tells tokens apart without revealing them.
    const tag = createHash('sha256').update(credential).digest('hex').slice(0, 12);
    this.file = join(dir, `owner-${tag}.lock`);
  }

  private owner(): number | undefined {
    try {
      const pid = (JSON.parse(readFileSync(this.file, 'utf8')) as { pid?: unknown }).pid;
      return typeof pid === 'number' ? pid : undefined;
    } catch {
      return undefined;
    }
  }

  acquire(): LockResult {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const fd = openSync(this.file, 'wx', 0o600);
        writeSync(fd, JSON.stringify({ pid: process.pid, since: new Date().toISOString() }));
        fsyncSync(fd);
        closeSync(fd);
        return { ok: true };
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      const pid = this.owner();
      if (pid === process.pid) return { ok: true };
      if (pid !== undefined && isPidAlive(pid)) return { ok: false, ownerPid: pid };
      // Stale (or unreadable) lock: move it aside atomically, then race for a fresh one with 'wx'.
      try {
        renameSync(this.file, `${this.file}.stale-${process.pid}`);
        unlinkSync(`${this.file}.stale-${process.pid}`);
      } catch {
        // another process moved it first
      }
    }
    const pid = this.owner();
    return pid !== undefined && pid !== process.pid ? { ok: false, ownerPid: pid } : { ok: true };
  }

  release(): void {
    if (this.owner() === process.pid) {
      try {
        unlinkSync(this.file);
      } catch {
        // already gone
      }
    }
  }
}
