/**
 * What the email channel keeps under `$KEEL_HOME/email/email.db` (node:sqlite, WAL, synchronous=FULL):
 * - `cursor`: per mailbox the UIDVALIDITY and the last UID taken in, so a restart neither misses nor repeats mail;
 * - `inbound`: every mail taken in, recorded before the cursor moves past it (state `pending` until it reached
 *   the queue or was set aside, with the reason), so a crash between the two is finished at the next start;
 * - `sent`: every message Keel sent (its Message-ID, thread, whether automatic, the delivery key), which makes
 *   Keel's own mail recognisable, caps replies per thread and keeps a delivery key from being sent twice.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS cursor (mailbox TEXT PRIMARY KEY, uidvalidity TEXT NOT NULL, last_uid INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS inbound (
  key TEXT PRIMARY KEY,
  uid INTEGER NOT NULL,
  message_id TEXT,
  state TEXT NOT NULL,
  reason TEXT,
  action_id TEXT,
  at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS inbound_state ON inbound (state);
CREATE INDEX IF NOT EXISTS inbound_mid ON inbound (message_id);
CREATE TABLE IF NOT EXISTS sent (
  message_id TEXT PRIMARY KEY,
  thread TEXT NOT NULL,
  recipients TEXT NOT NULL,
  auto INTEGER NOT NULL,
  delivery_key TEXT UNIQUE,
  state TEXT NOT NULL,
  at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS sent_thread ON sent (thread, auto, at);
`;

export interface Cursor {
  uidValidity: string;
  lastUid: number;
}

export type InboundState = 'pending' | 'done' | 'skipped';

export interface SentRow {
  messageId: string;
  thread: string;
  state: 'sending' | 'sent';
}

export class EmailStore {
  private readonly db: DatabaseSync;

  constructor(home: string) {
    const dir = join(home, 'email');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.db = new DatabaseSync(join(dir, 'email.db'));
    this.db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000;');
    this.db.exec(SCHEMA);
  }

  cursor(mailbox: string): Cursor | undefined {
    const r = this.db.prepare('SELECT uidvalidity, last_uid FROM cursor WHERE mailbox = ?').get(mailbox) as { uidvalidity: string; last_uid: number } | undefined;
    return r ? { uidValidity: r.uidvalidity, lastUid: r.last_uid } : undefined;
  }

  setCursor(mailbox: string, c: Cursor): void {
    this.db
      .prepare('INSERT INTO cursor (mailbox, uidvalidity, last_uid) VALUES (?, ?, ?) ON CONFLICT (mailbox) DO UPDATE SET uidvalidity = excluded.uidvalidity, last_uid = excluded.last_uid')
      .run(mailbox, c.uidValidity, c.lastUid);
  }

  /**
   * Records a mail taken in and moves the cursor past it, in one transaction: after a crash either both
   * happened or neither. Returns false when the key was already recorded (a redelivery).
   */
  takeIn(mailbox: string, cursor: Cursor, m: { key: string; uid: number; messageId?: string; state: InboundState; reason?: string }): boolean {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const r = this.db
        .prepare('INSERT OR IGNORE INTO inbound (key, uid, message_id, state, reason, at) VALUES (?, ?, ?, ?, ?, ?)')
        .run(m.key, m.uid, m.messageId ?? null, m.state, m.reason ?? null, Date.now());
      this.setCursor(mailbox, cursor);
      this.db.exec('COMMIT');
      return Number(r.changes) > 0;
    } catch (e) {
      this.db.exec('ROLLBACK');
      throw e;
    }
  }

  settle(key: string, state: Exclude<InboundState, 'pending'>, detail: { reason?: string; actionId?: string }): void {
    this.db.prepare('UPDATE inbound SET state = ?, reason = ?, action_id = ? WHERE key = ?').run(state, detail.reason ?? null, detail.actionId ?? null, key);
  }

  pending(): Array<{ key: string; uid: number }> {
    return this.db.prepare("SELECT key, uid FROM inbound WHERE state = 'pending' ORDER BY uid").all() as Array<{ key: string; uid: number }>;
  }

  /** Whether a mail with this Message-ID was already taken in under another key (the same mail delivered twice). */
  seenMessageId(messageId: string, exceptKey: string): boolean {
    return this.db.prepare('SELECT 1 FROM inbound WHERE message_id = ? AND key <> ? LIMIT 1').get(messageId, exceptKey) !== undefined;
  }

  inbound(key: string): { state: InboundState; reason: string | null; actionId: string | null } | undefined {
    const r = this.db.prepare('SELECT state, reason, action_id FROM inbound WHERE key = ?').get(key) as { state: InboundState; reason: string | null; action_id: string | null } | undefined;
    return r ? { state: r.state, reason: r.reason, actionId: r.action_id } : undefined;
  }

  /** Whether Keel itself sent a message with this Message-ID. */
  isOwnMessageId(messageId: string): boolean {
    return this.db.prepare('SELECT 1 FROM sent WHERE message_id = ?').get(messageId) !== undefined;
  }

  /** Automatic replies sent into this thread since `sinceMs`. */
  autoRepliesSince(thread: string, sinceMs: number): number {
    const r = this.db.prepare('SELECT count(*) AS n FROM sent WHERE thread = ? AND auto = 1 AND at >= ?').get(thread, sinceMs) as { n: number };
    return Number(r.n);
  }

  byDeliveryKey(key: string): SentRow | undefined {
    const r = this.db.prepare('SELECT message_id, thread, state FROM sent WHERE delivery_key = ?').get(key) as { message_id: string; thread: string; state: SentRow['state'] } | undefined;
    return r ? { messageId: r.message_id, thread: r.thread, state: r.state } : undefined;
  }

  /** Written before the message goes to SMTP: its Message-ID is known as Keel's own from then on. */
  recordSending(row: { messageId: string; thread: string; recipients: string; auto: boolean; deliveryKey?: string }): void {
    this.db
      .prepare("INSERT INTO sent (message_id, thread, recipients, auto, delivery_key, state, at) VALUES (?, ?, ?, ?, ?, 'sending', ?) ON CONFLICT (message_id) DO UPDATE SET at = excluded.at")
      .run(row.messageId, row.thread, row.recipients, row.auto ? 1 : 0, row.deliveryKey ?? null, Date.now());
  }

  markSent(messageId: string): void {
    this.db.prepare("UPDATE sent SET state = 'sent' WHERE message_id = ?").run(messageId);
  }

  /** A send that failed for certain (refused by the server) no longer counts as sent. */
  forget(messageId: string): void {
    this.db.prepare('DELETE FROM sent WHERE message_id = ?').run(messageId);
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }
}
