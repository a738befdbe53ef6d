/**
 * What the email channel keeps besides the kit's store (ingress and mailbox cursor in
 * `$KEEL_HOME/channels/email/kit.db`): `$KEEL_HOME/email/email.db` (node:sqlite, WAL, synchronous=FULL) with every
 * message Keel sent: its Message-ID (written before the mail goes out, so Keel's own mail is recognised when it
 * comes back), its thread, whether it was automatic (the per-thread reply limit) and its delivery key (a key that
 * was sent is never sent again). This is the email channel's delivery ledger: a mail is one unit, and its
 * Message-ID must be known before it is sent.
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
  delivery_key TEXT UNIQUE,
  state TEXT NOT NULL,
  at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS sent_thread ON sent (thread, auto, at);
`;

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

  byDeliveryKey(key: string): SentRow | undefined {
    const r = this.db.prepare('SELECT message_id, thread, state FROM sent WHERE delivery_key = ?').get(key) as
      | { message_id: string; thread: string; state: SentRow['state'] }
      | undefined;
    return r ? { messageId: r.message_id, thread: r.thread, state: r.state } : undefined;
  }

  /** Written before the message goes to SMTP: its Message-ID is known as Keel's own from then on. */
  recordSending(row: { messageId: string; thread: string; recipients: string; auto: boolean; deliveryKey?: string }): void {
    this.db
      .prepare(
        "INSERT INTO sent (message_id, thread, recipients, auto, delivery_key, state, at) VALUES (?, ?, ?, ?, ?, 'sending', ?) ON CONFLICT (message_id) DO UPDATE SET at = excluded.at",
      )
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
