/**
 * Delivery ledger: every outbound chunk is written (key, chunk index, body, state) before it is sent and marked
 * sent with its platform id right after the platform confirmed it. A key already in the ledger is never rendered
 * or sent again: its confirmed chunks are skipped, its unconfirmed ones sent, in order.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Json } from '../types.js';
import type { ChannelStore } from './store.js';

/**
 * Sends one chunk and returns the platform's message id. `key` and `index` identify the chunk for good: pass
 * `platformNonce(key, index)` where the platform deduplicates by a client nonce (Discord's `nonce` + `enforce_nonce`).
 */
export type ChunkSender<C> = (chunk: C, index: number, chatId: string, key: string) => Promise<string>;

/**
 * A stable nonce of at most 25 characters for chunk `index` of ledger key `key` (Discord's limit): the same chunk
 * sent again after a crash carries the same nonce, so a platform that honours nonces posts it once.
 * @example await rest.post(route, { body: { content, nonce: platformNonce(key, i), enforce_nonce: true } });
 */
export function platformNonce(key: string, index: number): string {
  return createHash('sha256').update(`${key}\u0000${index}`).digest('base64url').slice(0, 25);
}

/**
 * @example
 * const ledger = new DeliveryLedger(store);
 * const ids = await ledger.deliver(`${action.id}:0`, chatId, chunks, (c) => api.sendMessage(chatId, c.html).then((m) => String(m.message_id)));
 */
export class DeliveryLedger {
  private readonly inFlight = new Map<string, Promise<string[]>>();
  private readonly select;
  private readonly mark;
  private readonly inserts = new Map<number, ReturnType<ChannelStore['db']['prepare']>>();

  constructor(private readonly store: ChannelStore) {
    // Prepared once: a message's bookkeeping is two statements (write its chunks, mark each sent), not compilations.
    this.select = store.db.prepare('SELECT chunk, chat_id, body, state, platform_id FROM delivery WHERE key = ? ORDER BY chunk');
    this.mark = store.db.prepare("UPDATE delivery SET state = 'sent', platform_id = ?, sent_at = ? WHERE key = ? AND chunk = ?");
  }

  /**
   * One statement writing all `n` chunks of a key, and nothing if the key is already there (first call wins):
   * atomic without an explicit transaction, and one round into SQLite instead of four.
   */
  private insertOf(n: number) {
    let s = this.inserts.get(n);
    if (!s) {
      const rows = Array.from({ length: n }, () => '(?, ?, ?, ?, ?)').join(', ');
      // One chunk: the primary key alone says whether the key was there. More: the whole set or nothing.
      s = this.store.db.prepare(
        n === 1
          ? 'INSERT INTO delivery(key, chunk, chat_id, body, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING'
          : `INSERT INTO delivery(key, chunk, chat_id, body, created_at) SELECT * FROM (VALUES ${rows}) WHERE NOT EXISTS (SELECT 1 FROM delivery WHERE key = ?)`,
      );
      if (n <= 16) this.inserts.set(n, s);
    }
    return s;
  }

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
    type Row = { chunk: number; chat_id: string; body: string | C; state: string; platform_id: string | null };
    // NORMAL (WAL): durable across a process crash. A power cut can lose these rows only for a reply whose action
    // has not completed yet (a reply is awaited before completion), so the re-run sends it: a repeat, never a loss.
    this.store.durability('NORMAL');
    let rows: Row[];
    if (chunks.length && chunks.length <= MAX_ROWS_PER_INSERT) {
      const now = Date.now();
      const args: Array<string | number> = [];
      for (let i = 0; i < chunks.length; i++) args.push(key, i, chatId, JSON.stringify(chunks[i]), now);
      if (chunks.length > 1) args.push(key);
      const written = Number(this.insertOf(chunks.length).run(...args).changes);
      // Fresh key: what was just written is what is sent (no need to read it back).
      rows = written
        ? chunks.map((c, i): Row => ({ chunk: i, chat_id: chatId, body: c, state: 'pending', platform_id: null }))
        : (this.select.all(key) as Row[]);
    } else if (chunks.length) {
      rows = this.store.tx(() => {
        const existing = this.select.all(key) as Row[];
        if (existing.length) return existing;
        const now = Date.now();
        const insert = this.store.db.prepare('INSERT INTO delivery(key, chunk, chat_id, body, created_at) VALUES(?, ?, ?, ?, ?)');
        chunks.forEach((c, i) => insert.run(key, i, chatId, JSON.stringify(c), now));
        return chunks.map((c, i): Row => ({ chunk: i, chat_id: chatId, body: c, state: 'pending', platform_id: null }));
      }, 'NORMAL');
    } else rows = this.select.all(key) as Row[];
    const ids: string[] = [];
    for (const r of rows) {
      if (r.state === 'sent') {
        ids.push(r.platform_id ?? '');
        continue;
      }
      // The duplicate window: the platform accepted this chunk but the process died before this line.
      const body = typeof r.body === 'string' ? (JSON.parse(r.body) as C) : r.body;
      const id = await send(body, r.chunk, r.chat_id, key);
      this.store.durability('NORMAL');
      this.mark.run(id, Date.now(), key, r.chunk);
      ids.push(id);
    }
    return ids;
  }
}

/** Chunks written by one multi-row statement; a longer message (rare) is written row by row in a transaction. */
const MAX_ROWS_PER_INSERT = 200;
