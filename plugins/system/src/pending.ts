/**
 * Commands waiting for a human's confirmation, in `$KEEL_HOME/commands-pending.json`.
 *
 * The running plugin and `keel commands` (another process) share the file: every read-modify-write happens under
 * a lock directory (`commands-pending.json.lock`, created atomically with mkdir, taken over when older than 10 s),
 * every write is a temp file renamed over the old one, and every operation re-reads the file first. Expired
 * entries are dropped (with a log line) whenever the file is read under the lock.
 */
import { errorsFor } from '../../../sdk/errors.js';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rmdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Actor, Logger } from '../../../sdk/index.js';

const coded = errorsFor('system');

export const PENDING_COMMANDS_FILE = 'commands-pending.json';

export interface PendingCommand {
  id: string;
  argv: string[];
  cwd: string;
  requestedBy?: Actor;
  requestedAt: string;
  expiresAt: string;
}

const LOCK_STALE_MS = 10_000;
const LOCK_WAIT_MS = 5_000;

export class PendingCommands {
  readonly path: string;
  constructor(
    home: string,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.path = join(home, PENDING_COMMANDS_FILE);
  }

  async list(): Promise<PendingCommand[]> {
    return this.locked(async (items) => ({ items, value: items }));
  }

  async add(entry: Omit<PendingCommand, 'id' | 'requestedAt' | 'expiresAt'>, ttlMinutes: number): Promise<PendingCommand> {
    const at = this.now();
    const item: PendingCommand = {
      id: `cmd_${at}_${randomBytes(3).toString('hex')}`,
      ...entry,
      requestedAt: new Date(at).toISOString(),
      expiresAt: new Date(at + ttlMinutes * 60_000).toISOString(),
    };
    return this.locked(async (items) => ({ items: [...items, item], value: item }));
  }

  /** Remove and return an entry (the one who takes it is the one who runs or refuses it). */
  async take(id: string): Promise<PendingCommand | undefined> {
    return this.locked(async (items) => {
      const found = items.find((c) => c.id === id);
      return { items: found ? items.filter((c) => c.id !== id) : items, value: found };
    });
  }

  private async locked<T>(fn: (items: PendingCommand[]) => Promise<{ items: PendingCommand[]; value: T }>): Promise<T> {
    const lock = `${this.path}.lock`;
    await mkdir(join(this.path, '..'), { recursive: true });
    const deadline = Date.now() + LOCK_WAIT_MS;
    for (;;) {
      try {
        await mkdir(lock);
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        const age = await stat(lock).then(
          (s) => Date.now() - s.mtimeMs,
          () => 0,
        );
        if (age > LOCK_STALE_MS) {
          await rmdir(lock).catch(() => {});
          continue;
        }
        if (Date.now() > deadline) throw coded('KEEL_E_FILE_LOCKED', `the pending command list is locked (${lock}); try again`);
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    try {
      const all = await this.read();
      const now = this.now();
      const live = all.filter((c) => {
        const expired = Date.parse(c.expiresAt) <= now;
        if (expired)
          this.log.info(`commands: pending command ${c.id} (${c.argv.join(' ')}) expired unconfirmed at ${c.expiresAt} and was dropped`);
        return !expired;
      });
      const { items, value } = await fn(live);
      if (items !== live || live.length !== all.length) await this.write(items);
      return value;
    } finally {
      await rmdir(lock).catch(() => {});
    }
  }

  private async read(): Promise<PendingCommand[]> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
    try {
      const parsed = JSON.parse(text) as unknown;
      const list = Array.isArray(parsed) ? parsed : (parsed as { commands?: unknown }).commands;
      if (!Array.isArray(list)) return [];
      return list.filter(
        (c): c is PendingCommand =>
          c !== null &&
          typeof c === 'object' &&
          typeof c.id === 'string' &&
          Array.isArray(c.argv) &&
          c.argv.every((a: unknown) => typeof a === 'string') &&
          typeof c.cwd === 'string' &&
          typeof c.expiresAt === 'string',
      );
    } catch {
      this.log.error(`commands: ${this.path} is not valid JSON; treating it as empty (nothing from it will run)`);
      return [];
    }
  }

  private async write(items: PendingCommand[]): Promise<void> {
    const tmp = `${this.path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    await writeFile(tmp, `${JSON.stringify({ commands: items }, null, 2)}\n`, { mode: 0o600 });
    await rename(tmp, this.path);
  }
}
