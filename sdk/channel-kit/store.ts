/**
 * One SQLite file per channel (`$KEEL_HOME/channels/<name>/kit.db`, WAL, synchronous=FULL): the durable ingress,
 * the persisted platform offset and the delivery ledger share it, so one transaction can record an inbound batch
 * together with the offset that acknowledges it.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

const DAY_MS = 24 * 3600 * 1000;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS inbound (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  message_id TEXT NOT NULL UNIQUE,
  chat_id TEXT NOT NULL,
  payload TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'recorded',
  outcome TEXT,
  recorded_at INTEGER NOT NULL,
  done_at INTEGER
);
CREATE INDEX IF NOT EXISTS inbound_open ON inbound(state, seq);
`;

/**
 * The delivery ledger keyed by (key, chunk) alone (WITHOUT ROWID, no secondary index): writing a chunk and marking
 * it sent each touch one b-tree page. `unfinished()` scans it once at start; pruning keeps it small.
 */
const DELIVERY = `
CREATE TABLE IF NOT EXISTS delivery (
  key TEXT NOT NULL,
  chunk INTEGER NOT NULL,
  chat_id TEXT NOT NULL,
  body TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending',
  platform_id TEXT,
  created_at INTEGER NOT NULL,
  sent_at INTEGER,
  PRIMARY KEY (key, chunk)
) WITHOUT ROWID;
`;

/** Schema version 2: `delivery` became WITHOUT ROWID; a version-1 file is migrated in one transaction. */
function migrate(db: DatabaseSync): void {
  const version = (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version;
  if (version >= 2) return;
  db.exec('BEGIN IMMEDIATE');
  try {
    const old = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'delivery'").get();
    if (old) {
      db.exec('DROP INDEX IF EXISTS delivery_open; ALTER TABLE delivery RENAME TO delivery_v1;');
      db.exec(DELIVERY);
      db.exec(
        'INSERT INTO delivery SELECT key, chunk, chat_id, body, state, platform_id, created_at, sent_at FROM delivery_v1; DROP TABLE delivery_v1;',
      );
    } else db.exec(DELIVERY);
    db.exec('PRAGMA user_version = 2; COMMIT');
  } catch (e) {
    db.exec('ROLLBACK');
    throw e;
  }
}

/**
 * The least string greater than every string that starts with `prefix` (its last code point raised by one, dropping
 * trailing U+10FFFF), or undefined when there is none (every key from `prefix` on qualifies).
 */
export function prefixEnd(prefix: string): string | undefined {
  const points = Array.from(prefix);
  while (points.length) {
    const cp = points.pop()!.codePointAt(0)!;
    if (cp >= 0x10ffff) continue;
    // A lone surrogate is stored as U+FFFD by SQLite's UTF-8 conversion: raise past that instead.
    const next = cp >= 0xd800 && cp <= 0xdfff ? 0xfffe : cp + 1;
    return points.join('') + String.fromCodePoint(next === 0xd800 ? 0xe000 : next);
  }
  return undefined;
}

/**
 * The channel's durable state. Open once per channel and share it between the ingress and the ledger.
 * @example const store = ChannelStore.open(ctx.home, 'chatA'); const offset = store.getValue('offset');
 */
export class ChannelStore {
  readonly db: DatabaseSync;
  readonly dir: string;

  private constructor(dir: string) {
    this.dir = dir;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.db = new DatabaseSync(join(dir, 'kit.db'));
    this.db.exec('PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA busy_timeout=5000;');
    this.db.exec(SCHEMA);
    migrate(this.db);
  }

  /** `$home/channels/<name>/kit.db`. */
  static open(home: string, channel: string): ChannelStore {
    if (!/^[A-Za-z0-9_-]+$/.test(channel)) throw new Error(`Channel name "${channel}" may only hold letters, digits, "-" and "_".`);
    return new ChannelStore(join(home, 'channels', channel));
  }

  private sync: 'FULL' | 'NORMAL' = 'FULL';

  /**
   * Sets how hard the next commits hit the disk. `FULL`: fsynced before the commit returns (survives power loss);
   * needed where the platform is acknowledged right after (the ingress record). `NORMAL` (WAL): survives a crash
   * of the process, and on power loss may lose only the last commits — used where a lost commit can at worst
   * cause a repeat that is caught later (done marks, ledger states), never a loss.
   */
  durability(level: 'FULL' | 'NORMAL'): void {
    if (this.sync === level) return;
    this.db.exec(`PRAGMA synchronous=${level}`);
    this.sync = level;
  }

  /** Runs `fn` in one transaction, committed with the given durability (default FULL) before it returns. */
  tx<T>(fn: () => T, level: 'FULL' | 'NORMAL' = 'FULL'): T {
    this.durability(level);
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const out = fn();
      this.db.exec('COMMIT');
      return out;
    } catch (e) {
      this.db.exec('ROLLBACK');
      throw e;
    }
  }

  // Prepared once, on first use: cursors are read and written inside the ingress's commits, once per conversation of
  // a burst, where compiling the statement every time cost more than running it.
  private getStmt: ReturnType<DatabaseSync['prepare']> | undefined;
  private setStmt: ReturnType<DatabaseSync['prepare']> | undefined;

  getValue(key: string): string | undefined {
    this.getStmt ??= this.db.prepare('SELECT value FROM kv WHERE key = ?');
    const row = this.getStmt.get(key) as { value: string } | undefined;
    return row?.value;
  }

  setValue(key: string, value: string): void {
    this.setStmt ??= this.db.prepare('INSERT INTO kv(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value');
    this.setStmt.run(key, value);
  }

  /**
   * Removes a stored value; a key that is not there is no error.
   * @example store.deleteValue(`status:${actionId}`);
   */
  deleteValue(key: string): void {
    this.db.prepare('DELETE FROM kv WHERE key = ?').run(key);
  }

  /**
   * Every stored value whose key starts with `prefix` (e.g. one cursor per chat).
   * @example for (const { key, value } of store.values('last:')) backfill(key.slice(5), value);
   */
  values(prefix: string): Array<{ key: string; value: string }> {
    // A range of the primary key (prefix <= key < the first string after every string that starts with prefix),
    // so a lookup reads the matching rows only, not the whole table. The keys compare as UTF-8 bytes, which order
    // as code points do, so that bound is the prefix with its last code point raised by one.
    const end = prefixEnd(prefix);
    const rows = (
      end === undefined
        ? this.db.prepare('SELECT key, value FROM kv WHERE key >= ? ORDER BY key').all(prefix)
        : this.db.prepare('SELECT key, value FROM kv WHERE key >= ? AND key < ? ORDER BY key').all(prefix, end)
    ) as Array<{ key: string; value: string }>;
    return rows.map((r) => ({ key: r.key, value: r.value }));
  }

  /**
   * Prunes with `days()` now and once a day after (a process that runs for months must not keep every message it
   * saw); returns what stops it. A failure is reported to `onError` and tried again the next day.
   */
  pruneDaily(days: () => number, onError: (e: unknown) => void): () => void {
    const run = () => {
      try {
        this.prune(days() * DAY_MS);
      } catch (e) {
        onError(e);
      }
    };
    run();
    const timer = setInterval(run, DAY_MS);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** Drops finished rows older than `maxAgeMs` (dedupe memory is kept that long). */
  prune(maxAgeMs: number, now = Date.now()): void {
    const before = now - maxAgeMs;
    this.db.prepare("DELETE FROM inbound WHERE state = 'done' AND done_at < ?").run(before);
    this.db.prepare("DELETE FROM delivery WHERE state = 'sent' AND sent_at < ?").run(before);
  }

  private readonly closing: Array<() => void> = [];

  /** Runs `fn` just before the store closes (a writer flushing what it holds back). */
  beforeClose(fn: () => void): void {
    this.closing.push(fn);
  }

  close(): void {
    if (!this.db.isOpen) return;
    for (const fn of this.closing.splice(0)) fn();
    this.db.close();
  }
}
