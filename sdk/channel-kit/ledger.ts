/**
 * Delivery ledger: every outbound chunk is written (key, chunk index, body, state) before it is sent and marked
 * sent with its platform id once the platform confirmed it. A key already in the ledger is never rendered or sent
 * again: its confirmed chunks are skipped, its unconfirmed ones sent, in order.
 *
 * Marks are written behind: a confirmed chunk's mark is committed at the end of the current turn of the event loop
 * (while the process waits on the network), or earlier by the next send, read, write or close of the ledger (no
 * ledgered request leaves while a mark is held), and the marks of one turn share one commit. The send does not
 * wait for that commit. The duplicate window is therefore: the platform accepted a chunk, and the process died
 * before the end of that turn, and before the next ledgered request.
 */
import { randomUUID } from 'node:crypto';
import type { Json } from '../types.js';
import type { LeaseHold } from './lease.js';
import type { SharedLedger } from './shared-ledger.js';
import type { ChannelStore } from './store.js';
import { WriteBehind } from './write-behind.js';

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
  // Not a secret, only distinct: four 32-bit multiplicative hashes of the key in one pass, each finished with
  // murmur3's mixer, 30 bits of each written as 6 base-32 digits (24 characters, 120 bits). A crypto digest
  // costs a trip into OpenSSL on the send path; turning wide numbers into text (toString) costs more than this.
  const s = `${key}\u0000${index}`;
  let a = 0x9e3779b9;
  let b = 0x85ebca6b;
  let c = 0xc2b2ae35;
  let d = 0x27d4eb2f;
  for (let i = 0; i < s.length; i++) {
    const x = s.charCodeAt(i);
    a = Math.imul(a ^ x, 2654435761);
    b = Math.imul(b ^ x, 1597334677);
    c = Math.imul(c ^ x, 2246822507);
    d = Math.imul(d ^ x, 3266489909);
  }
  return digits(mix(a ^ d)) + digits(mix(b ^ a)) + digits(mix(c ^ b)) + digits(mix(d ^ c));
}

/** murmur3's 32-bit finaliser: every input bit reaches every output bit. */
function mix(h: number): number {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

const BASE32 = '0123456789abcdefghijklmnopqrstuv';

/** The low 30 bits of `h` as 6 base-32 digits. */
function digits(h: number): string {
  return (
    BASE32[h & 31]! +
    BASE32[(h >>> 5) & 31]! +
    BASE32[(h >>> 10) & 31]! +
    BASE32[(h >>> 15) & 31]! +
    BASE32[(h >>> 20) & 31]! +
    BASE32[(h >>> 25) & 31]!
  );
}

/**
 * @example
 * const ledger = new DeliveryLedger(store);
 * const ids = await ledger.deliver(`${action.id}:0`, chatId, chunks, (c) => api.sendMessage(chatId, c.html).then((m) => String(m.message_id)));
 */
export class DeliveryLedger {
  private readonly inFlight = new Map<string, Promise<string[]>>();
  private readonly select;
  private readonly inserts = new Map<number, ReturnType<ChannelStore['db']['prepare']>>();
  /** Confirmed chunks whose mark is not committed yet: [platform id, sent at, key, chunk]. */
  private readonly marks: WriteBehind<[string, number, string, number]>;

  /**
   * `shared`: the ledger's copy in Redis when several machines share the queue (shared-ledger.ts): a key first
   * sent on another machine delivers that machine's chunks, minus the ones it had confirmed.
   */
  constructor(
    private readonly store: ChannelStore,
    private readonly shared?: SharedLedger,
  ) {
    // Prepared once: a message's bookkeeping is two statements (write its chunks, mark each sent), not compilations.
    this.select = store.db.prepare('SELECT chunk, chat_id, body, state, platform_id FROM delivery WHERE key = ? ORDER BY chunk');
    // NORMAL (WAL): durable across a process crash; a mark lost to a power cut means a repeat, never a loss. A
    // failed end-of-turn write is left for the next send, read, write or close of the ledger, which reports it.
    this.marks = new WriteBehind(
      store,
      store.db.prepare("UPDATE delivery SET state = 'sent', platform_id = ?, sent_at = ? WHERE key = ? AND chunk = ?"),
    );
  }

  /**
   * Commits the marks held back (one commit for all of them). Called at the end of the turn they were made in,
   * and before each ledgered send, each read or write of the ledger and the close of its store, so no request
   * leaves while a mark is held and nothing ever reads a stale state.
   */
  flush(): void {
    this.marks.flush();
  }

  private markSent(id: string, key: string, chunk: number): void {
    this.marks.add([id, Date.now(), key, chunk]);
    this.shared?.mark(key, chunk, id);
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
   * whatever `chunks` it brings) and returns the platform ids of every chunk in order. `hold`: the connection's
   * lease this delivery is fenced by; the shared copy's claim is refused (`KEEL_E_LEASE_LOST`, nothing stored
   * anywhere) when the lease no longer holds it.
   */
  deliver<C extends Json>(key: string, chatId: string, chunks: C[], send: ChunkSender<C>, hold?: LeaseHold): Promise<string[]> {
    const running = this.inFlight.get(key);
    if (running) return running;
    const p = this.run(key, chatId, chunks, send, hold);
    this.inFlight.set(key, p);
    // Cleared before the caller hears back (registered first), either way it ends.
    const clear = () => this.inFlight.delete(key);
    p.then(clear, clear);
    return p;
  }

  /** Keys with chunks written but not confirmed (left by a crash), oldest first. */
  unfinished(): Array<{ key: string; chatId: string }> {
    this.flush();
    return this.store.db
      .prepare("SELECT key, MIN(chat_id) AS chatId FROM delivery WHERE state = 'pending' GROUP BY key ORDER BY MIN(created_at)")
      .all() as Array<{ key: string; chatId: string }>;
  }

  /** Sends what is left of a stored key. */
  resume<C extends Json>(key: string, send: ChunkSender<C>, hold?: LeaseHold): Promise<string[]> {
    return this.deliver<C>(key, '', [], send, hold);
  }

  /** Stored state of a key (for status and tests). */
  entries(key: string): Array<{ chunk: number; state: 'pending' | 'sent'; platformId?: string }> {
    this.flush();
    const rows = this.store.db.prepare('SELECT chunk, state, platform_id FROM delivery WHERE key = ? ORDER BY chunk').all(key) as Array<{
      chunk: number;
      state: 'pending' | 'sent';
      platform_id: string | null;
    }>;
    return rows.map((r) => ({ chunk: r.chunk, state: r.state, ...(r.platform_id ? { platformId: r.platform_id } : {}) }));
  }

  private async run<C extends Json>(key: string, chatId: string, chunks: C[], send: ChunkSender<C>, hold?: LeaseHold): Promise<string[]> {
    type Row = { chunk: number; chat_id: string; body: string | C; state: string; platform_id: string | null };
    // NORMAL (WAL): durable across a process crash. A power cut can lose these rows only for a reply whose action
    // has not completed yet (a reply is awaited before completion), so the re-run sends it: a repeat, never a loss.
    this.flush();
    this.store.durability('NORMAL');
    // Several machines: a key this machine has never seen may have been sent (in part) by another one.
    let sentElsewhere: Map<number, string> | undefined;
    if (this.shared && chunks.length && (this.select.all(key) as Row[]).length === 0) {
      const claimed = await this.shared.claim(key, chatId, chunks, hold);
      chunks = claimed.chunks as C[];
      chatId = claimed.chatId;
      if (claimed.sent.size) sentElsewhere = claimed.sent;
    }
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
    if (this.shared && !sentElsewhere && chunks.length === 0 && rows.some((r) => r.state !== 'sent')) {
      // Resuming here what another machine may have finished meanwhile (the connection moved away and back):
      // what it confirmed in the shared copy is not sent again. Fenced like any claim.
      const bodies = rows.map((r) => (typeof r.body === 'string' ? (JSON.parse(r.body) as C) : r.body));
      const claimed = await this.shared.claim(key, rows[0]!.chat_id, bodies, hold);
      if (claimed.sent.size) sentElsewhere = claimed.sent;
    }
    if (sentElsewhere) {
      // Confirmed by the machine that sent first: recorded here as sent, never sent again.
      for (const r of rows) {
        const id = sentElsewhere.get(r.chunk);
        if (id === undefined || r.state === 'sent') continue;
        this.marks.add([id, Date.now(), key, r.chunk]);
        r.state = 'sent';
        r.platform_id = id;
      }
    }
    const ids: string[] = [];
    for (const r of rows) {
      if (r.state === 'sent') {
        ids.push(r.platform_id ?? '');
        continue;
      }
      // No request leaves while an earlier chunk's mark is held back: a crash during this send never resends it.
      this.flush();
      // The duplicate window: the platform accepted this chunk but the process died before its mark was committed.
      const body = typeof r.body === 'string' ? (JSON.parse(r.body) as C) : r.body;
      const id = await send(body, r.chunk, r.chat_id, key);
      this.markSent(id, key, r.chunk);
      ids.push(id);
    }
    return ids;
  }
}

/** Chunks written by one multi-row statement; a longer message (rare) is written row by row in a transaction. */
const MAX_ROWS_PER_INSERT = 200;
