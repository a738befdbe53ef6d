/**
 * Delivery ledger: every outbound chunk is written (key, chunk index, body, state) before it is sent and marked
 * sent with its platform id right after the platform confirmed it. A key already in the ledger is never rendered
 * or sent again: its confirmed chunks are skipped, its unconfirmed ones sent, in order.
 */
import { randomUUID } from 'node:crypto';
import type { Json } from '../types.js';
import type { ChannelStore } from './store.js';

/** Sends one chunk and returns the platform's message id. */
export type ChunkSender<C> = (chunk: C, index: number, chatId: string) => Promise<string>;

/**
 * @example
 * const ledger = new DeliveryLedger(store);
 * const ids = await ledger.deliver(`${action.id}:0`, chatId, chunks, (c) => api.sendMessage(chatId, c.html).then((m) => String(m.message_id)));
 */
export class DeliveryLedger {
  private readonly inFlight = new Map<string, Promise<string[]>>();

  constructor(private readonly store: ChannelStore) {}

  /** A fresh key for a send nobody gave a key to (still ledgered, so a crash resumes it). */
  static freshKey(): string {
    return `send:${randomUUID()}`;
  }

  /**
   * Delivers `chunks` under `key` (first call wins: a later call with the same key delivers what was stored then,
   * whatever `chunks` it brings) and returns the platform ids of every chunk in order.
   */
  deliver<C extends Json>(key: string, chatId: string, chunks: C[], send: ChunkSender<C>): Promise<string[]> {
    const running = this.inFlight.get(key);
    if (running) return running;
    const p = this.run(key, chatId, chunks, send).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, p);
    return p;
  }

  /** Keys with chunks written but not confirmed (left by a crash), oldest first. */
  unfinished(): Array<{ key: string; chatId: string }> {
    return this.store.db
      .prepare("SELECT key, MIN(chat_id) AS chatId FROM delivery WHERE state = 'pending' GROUP BY key ORDER BY MIN(created_at)")
      .all() as Array<{ key: string; chatId: string }>;
  }

  /** Sends what is left of a stored key. */
  resume<C extends Json>(key: string, send: ChunkSender<C>): Promise<string[]> {
    return this.deliver<C>(key, '', [], send);
  }

  /** Stored state of a key (for status and tests). */
  entries(key: string): Array<{ chunk: number; state: 'pending' | 'sent'; platformId?: string }> {
    const rows = this.store.db.prepare('SELECT chunk, state, platform_id FROM delivery WHERE key = ? ORDER BY chunk').all(key) as Array<{
      chunk: number;
      state: 'pending' | 'sent';
      platform_id: string | null;
    }>;
    return rows.map((r) => ({ chunk: r.chunk, state: r.state, ...(r.platform_id ? { platformId: r.platform_id } : {}) }));
  }

  private async run<C extends Json>(key: string, chatId: string, chunks: C[], send: ChunkSender<C>): Promise<string[]> {
    const db = this.store.db;
    const rows = this.store.tx(() => {
      const existing = db.prepare('SELECT chunk, chat_id, body, state, platform_id FROM delivery WHERE key = ? ORDER BY chunk').all(key);
      if (existing.length || !chunks.length) return existing;
      const ins = db.prepare('INSERT INTO delivery(key, chunk, chat_id, body, created_at) VALUES(?, ?, ?, ?, ?)');
      const now = Date.now();
      chunks.forEach((c, i) => ins.run(key, i, chatId, JSON.stringify(c), now));
      return db.prepare('SELECT chunk, chat_id, body, state, platform_id FROM delivery WHERE key = ? ORDER BY chunk').all(key);
      // NORMAL (WAL): durable across a process crash. A power cut can lose these rows only for a reply whose action
      // has not completed yet (a reply is awaited before completion), so the re-run sends it: a repeat, never a loss.
    }, 'NORMAL') as Array<{ chunk: number; chat_id: string; body: string; state: string; platform_id: string | null }>;
    const mark = db.prepare("UPDATE delivery SET state = 'sent', platform_id = ?, sent_at = ? WHERE key = ? AND chunk = ?");
    const ids: string[] = [];
    for (const r of rows) {
      if (r.state === 'sent') {
        ids.push(r.platform_id ?? '');
        continue;
      }
      // The duplicate window: the platform accepted this chunk but the process died before this line.
      const id = await send(JSON.parse(r.body) as C, r.chunk, r.chat_id);
      this.store.durability('NORMAL');
      mark.run(id, Date.now(), key, r.chunk);
      ids.push(id);
    }
    return ids;
  }
}
