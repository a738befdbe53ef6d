/**
 * What the email channel keeps besides the kit's store (ingress, mailbox cursor and the delivery ledger of its
 * sends and replies in `$KEEL_HOME/channels/email/kit.db`): `$KEEL_HOME/email/email.db` (node:sqlite, WAL,
 * synchronous=FULL) with every message Keel sent: its Message-ID (written before the mail goes out, so Keel's own
 * mail is recognised when it comes back), its thread and whether it was automatic (the per-thread reply limit).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS sent (
  message_id TEXT PRIMARY KEY,
  thread TEXT NOT NULL,
  recipients TEXT NOT NULL,
  auto INTEGER NOT NULL,
  state TEXT NOT NULL,
  at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS sent_thread ON sent (thread, auto, at);
`;

export class EmailStore {
  private readonly db: DatabaseSync;

  constructor(home: string) {
    const dir = join(home, 'email');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.db = new DatabaseSync(join(dir, 'email.db'));
    this.db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000;');
    this.db.exec(SCHEMA);
  }

  /** Whether Keel itself sent a message with this Message-ID. */
  isOwnMessageId(messageId: string): boolean {
    return this.db.prepare('SELECT 1 FROM sent WHERE message_id = ?').get(messageId) !== undefined;
  }

  /** Automatic replies sent into this thread since `sinceMs`. */
  autoRepliesSince(thread: string, sinceMs: number): number {
    const r = this.db.prepare('SELECT count(*) AS n FROM sent WHERE thread = ? AND auto = 1 AND at >= ?').get(thread, sinceMs) as {
      n: number;
    };
    return Number(r.n);
  }

  /** Written before the message goes to SMTP: its Message-ID is known as Keel's own from then on. */
  recordSending(row: { messageId: string; thread: string; recipients: string; auto: boolean }): void {
    this.db
      .prepare(
        "INSERT INTO sent (message_id, thread, recipients, auto, state, at) VALUES (?, ?, ?, ?, 'sending', ?) ON CONFLICT (message_id) DO UPDATE SET at = excluded.at",
      )
      .run(row.messageId, row.thread, row.recipients, row.auto ? 1 : 0, Date.now());
  }

  markSent(messageId: string): void {
    this.db.prepare("UPDATE sent SET state = 'sent' WHERE message_id = ?").run(messageId);
  }

  /** A send that failed for certain (refused by the server) no longer counts as sent. */
  forget(messageId: string): void {
    this.db.prepare('DELETE FROM sent WHERE message_id = ?').run(messageId);
  }

  /**
   * The replies the earlier email channel (before defineChannel) recorded as sent under its own delivery keys
   * (`<actionId>:reply:<n>`, column `delivery_key`): `write` gets each under the kit's key (`<actionId>:r<n>`) and
   * records it in the ledger; the old key is then cleared, so each is moved once. Returns how many were moved.
   */
  moveOldReplyKeys(write: (r: { key: string; messageId: string; recipients: string; at: number }) => void): number {
    const columns = this.db.prepare('PRAGMA table_info(sent)').all() as Array<{ name: string }>;
    if (!columns.some((c) => c.name === 'delivery_key')) return 0;
    const rows = this.db
      .prepare("SELECT message_id, recipients, delivery_key, at FROM sent WHERE state = 'sent' AND delivery_key LIKE '%:reply:%'")
      .all() as Array<{ message_id: string; recipients: string; delivery_key: string; at: number }>;
    let moved = 0;
    for (const r of rows) {
      const m = /^(.+):reply:(\d+)$/.exec(r.delivery_key);
      if (!m) continue;
      write({ key: `${m[1]}:r${m[2]}`, messageId: r.message_id, recipients: r.recipients, at: Number(r.at) });
      this.db.prepare('UPDATE sent SET delivery_key = NULL WHERE message_id = ?').run(r.message_id);
      moved++;
    }
    return moved;
  }

  close(): void {
    if (this.db.isOpen) this.db.close();
  }
}
