/**
 * One Keel process receives a mailbox at a time (`keel run` and `keel gateway` on one home would otherwise both
 * take mail in): a lock file `$KEEL_HOME/email/receiver-<hash of server and user>.lock` holding the owner's pid;
 * a lock whose pid is gone is taken over. A small local equivalent of the channel kit's OwnerLock.
 */
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { isPidAlive } from '../../../sdk/index.js';

export class ReceiverLock {
  readonly file: string;

  constructor(home: string, mailbox: string) {
    const dir = join(home, 'email');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.file = join(dir, `receiver-${createHash('sha256').update(mailbox).digest('hex').slice(0, 12)}.lock`);
  }

  private owner(): number | undefined {
    try {
      const pid = (JSON.parse(readFileSync(this.file, 'utf8')) as { pid?: unknown }).pid;
      return typeof pid === 'number' ? pid : undefined;
    } catch {
      return undefined;
    }
  }

  /** Takes the lock; returns the pid of the live process holding it otherwise. */
  acquire(): { ok: true } | { ok: false; ownerPid: number } {
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
      try {
        unlinkSync(this.file);
      } catch {
        // another process removed it first; race again for 'wx'
      }
    }
    const pid = this.owner();
    return pid !== undefined && pid !== process.pid ? { ok: false, ownerPid: pid } : { ok: true };
  }

  release(): void {
    if (this.owner() !== process.pid) return;
    try {
      unlinkSync(this.file);
    } catch {
      // already gone
    }
  }
}
