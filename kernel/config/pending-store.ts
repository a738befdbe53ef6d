/**
 * Configuration changes the agent asked for and a human has not yet decided on
 * (`$KEEL_HOME/config-pending.json`). Values are kept in clear because approving must apply them;
 * the file is therefore written 0600 like the config file itself.
 *
 * The daemon and a `keel config approve` in another process both touch this file, and the agent may ask for
 * several changes at once, so every change takes the file's lock (`config-pending.json.lock`), re-reads it from
 * disk, edits and writes it before letting go: no request is lost and no decided one comes back.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Actor, Logger } from '../../sdk/types.js';
import { withLock } from '../queue/lock.js';
import { writeFileAtomic } from './atomic-file.js';

export interface StoredPendingChange {
  id: string;
  key: string;
  value: unknown;
  reason?: string;
  requestedBy?: Actor;
  requestedAt: string;
}

export class PendingStore {
  #items: StoredPendingChange[] = [];

  constructor(
    readonly path: string,
    private readonly log: Logger | undefined,
    private readonly now: () => number,
  ) {}

  /** The list as last read or written. */
  list(): StoredPendingChange[] {
    return this.#items.map((c) => ({ ...c }));
  }

  /** Re-read from disk. A corrupt file is moved aside (kept for a human) and treated as empty. */
  async load(): Promise<StoredPendingChange[]> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      this.#items = [];
      return this.list();
    }
    try {
      const parsed = JSON.parse(text) as { changes?: unknown };
      if (!Array.isArray(parsed.changes)) throw new Error('no "changes" array');
      this.#items = parsed.changes.filter(isStoredChange);
    } catch (e) {
      const aside = `${this.path}.corrupt-${this.now()}`;
      await rename(this.path, aside).catch(() => {});
      this.log?.error(`config: ${this.path} is unreadable (${(e as Error).message}); moved to ${aside}, starting with no pending changes`);
      this.#items = [];
    }
    return this.list();
  }

  /** Add a request, or return the identical one already waiting (an agent retrying must not pile up copies). */
  async add(change: Omit<StoredPendingChange, 'id' | 'requestedAt'>): Promise<StoredPendingChange> {
    return this.#edit(async () => {
      const same = this.#items.find((c) => c.key === change.key && sameValue(c.value, change.value));
      if (same) return { ...same };
      const item: StoredPendingChange = {
        id: `cfg_${this.now()}_${randomBytes(3).toString('hex')}`,
        ...change,
        requestedAt: new Date(this.now()).toISOString(),
      };
      this.#items.push(item);
      await this.#save();
      return { ...item };
    });
  }

  async get(id: string): Promise<StoredPendingChange | undefined> {
    await this.load();
    const found = this.#items.find((c) => c.id === id);
    return found ? { ...found } : undefined;
  }

  /**
   * Takes a request off the list (the one who takes it decides it: an approval and a rejection racing in two
   * processes cannot both happen). `check` runs first under the lock; if it throws, the request stays.
   */
  async remove(id: string, check: (c: StoredPendingChange) => void = () => undefined): Promise<StoredPendingChange | undefined> {
    return this.#edit(async () => {
      const idx = this.#items.findIndex((c) => c.id === id);
      if (idx < 0) return undefined;
      check({ ...this.#items[idx]! });
      const [removed] = this.#items.splice(idx, 1);
      await this.#save();
      return removed;
    });
  }

  /** Puts back a request taken with `remove` whose decision could not be carried out. */
  async restore(item: StoredPendingChange): Promise<void> {
    await this.#edit(async () => {
      if (this.#items.some((c) => c.id === item.id)) return;
      this.#items.push(item);
      await this.#save();
    });
  }

  /** `fn` on the list as it is on disk, under the file's lock (one editor at a time, in this process or another). */
  async #edit<T>(fn: () => Promise<T>): Promise<T> {
    await mkdir(dirname(this.path), { recursive: true, mode: 0o700 });
    return withLock(
      `${this.path}.lock`,
      async () => {
        await this.load();
        return fn();
      },
      { what: 'list of pending configuration changes' },
    );
  }

  async #save(): Promise<void> {
    await writeFileAtomic(this.path, `${JSON.stringify({ changes: this.#items }, null, 2)}\n`, 0o600);
  }
}

function isStoredChange(v: unknown): v is StoredPendingChange {
  if (v === null || typeof v !== 'object') return false;
  const c = v as Record<string, unknown>;
  return typeof c['id'] === 'string' && typeof c['key'] === 'string' && typeof c['requestedAt'] === 'string' && 'value' in c;
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
