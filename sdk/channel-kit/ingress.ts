/**
 * Durable ingress: an inbound platform message is written (with the platform cursor that acknowledges it, or a
 * history cursor, in the same transaction) before the platform is told it arrived, deduplicated by its platform id,
 * handled in order per chat, and marked done only after its handler finished. Recorded-but-not-done entries are
 * driven again at start.
 *
 * In order, pipelined: a chat's next message is handled once the previous one's handler says its effect is
 * *ordered* (`turn.ordered()`: `receive` calls it once the queue push is issued, whose place in the queue is then
 * fixed), without waiting for that effect to be durable; a handler that never says so (a command answered
 * directly) holds the chat until it finishes. Each message is still marked done only once its own handler
 * finished, so a crash drives again exactly what was not durable.
 */
import { errorCodeOf, errorMessage } from '../errors.js';
import type { Logger } from '../types.js';
import type { ChannelStore } from './store.js';
import { WriteBehind } from './write-behind.js';

/** Errors that say the queue is out of reach for now, not that the message is bad (kernel/errors.ts). */
const QUEUE_AWAY = new Set(['KEEL_E_QUEUE_UNREACHABLE', 'KEEL_E_QUEUE_LOCKED']);

/** One inbound platform message as the ingress keeps it. `payload` is the raw platform object (JSON). */
export interface IngressItem<T> {
  /** Unique per channel: the dedupe key. */
  messageId: string;
  /** Messages of one chat are handled in order. */
  chatId: string;
  payload: T;
}

/**
 * A stored value written in the same transaction as a record: the platform cursor that acknowledges it (Telegram's
 * next offset), or a history cursor per chat. `value` may be a function of the stored value (undefined when none),
 * run inside the transaction: for a cursor that only moves forward whatever order the messages come in.
 * @example { key: `last:${channel}`, value: (stored) => newerTs(stored, ts) }
 */
export interface IngressCursor {
  key: string;
  value: string | ((stored: string | undefined) => string);
}

/** What a handler may tell the ingress while it runs. */
export interface IngressTurn {
  /**
   * The effect is ordered (e.g. the queue push is issued, so what the next message of the chat pushes lands after
   * it): the next message of the chat may be handled now. Optional; idempotent.
   */
  ordered(): void;
  /**
   * Resolves once every earlier message of the chat has finished (its effect durable): for a handler that reads
   * what they did (a built-in command answering with the queue's state) rather than adding to it.
   */
  readonly previous: Promise<void>;
}

export interface IngressOptions<T> {
  /**
   * Turns the message into its effect (usually `receive`, passing `turn.ordered` as its `onOrdered`). Must be
   * idempotent per `messageId`: after a crash between the effect and "done" it runs again (`receive` recognises an
   * action it already queued). Returns a short outcome recorded with the entry.
   */
  handle(item: IngressItem<T>, turn: IngressTurn): Promise<string | void>;
  log: Logger;
  /** Attempts of a failing handler before the entry is closed as failed (default 5). */
  maxAttempts?: number;
  /** First retry delay of a failing handler (default 500 ms, doubled each time). */
  retryBaseMs?: number;
}

/**
 * @example
 * const ingress = new Ingress(store, { log: ctx.log, handle: (m) => receive(ctx, toInbound(m.payload), opts).then((o) => o.kind) });
 * ingress.recover();
 * const fresh = ingress.record(updates.map(toItem), { key: 'offset', value: String(nextOffset) });
 */
export class Ingress<T> {
  /** Per chat: resolves when the chat's last scheduled message is ordered (or finished), so the next may start. */
  private readonly chains = new Map<string, Promise<void>>();
  /** Handlers running (or waiting for their chat's turn), for `idle()`. */
  private readonly running = new Set<Promise<void>>();
  /** Per chat: resolves when every message scheduled so far has finished. */
  private readonly finished = new Map<string, Promise<void>>();
  private closed = false;
  private batch:
    | { items: IngressItem<T>[]; cursors: IngressCursor[]; durability: 'FULL' | 'NORMAL'; done: Promise<Set<IngressItem<T>>> }
    | undefined;
  private readonly insert;
  private readonly payloadOf;
  /** Done marks, written behind: [outcome, done at, message id]. */
  private readonly dones: WriteBehind<[string, number, string]>;

  constructor(
    private readonly store: ChannelStore,
    private readonly o: IngressOptions<T>,
  ) {
    this.insert = store.db.prepare('INSERT OR IGNORE INTO inbound(message_id, chat_id, payload, recorded_at) VALUES(?, ?, ?, ?)');
    this.payloadOf = store.db.prepare('SELECT payload FROM inbound WHERE message_id = ?');
    // A done mark lost to a crash only makes the entry run again, and the handler is idempotent.
    this.dones = new WriteBehind(
      store,
      store.db.prepare("UPDATE inbound SET state = 'done', outcome = ?, done_at = ? WHERE message_id = ?"),
      (e, held) => this.o.log.warn(`Ingress: could not mark ${held} handled message(s) done yet: ${errorMessage(e)}`),
    );
  }

  /**
   * Commits the done marks held back (one commit for all of them; the next record takes them into its own).
   * Called at the end of the turn they were made in, and before every read of the entries and the store's close.
   */
  flush(): void {
    this.dones.flush();
  }

  /** Marks an entry done at the end of this turn (with the others of the turn, in one commit). */
  private done(outcome: string, messageId: string): void {
    this.dones.add([outcome, Date.now(), messageId]);
  }

  /**
   * Records a batch and, in the same transaction, the platform cursor (e.g. Telegram's next offset), or several
   * (one history cursor per chat; written in the order given). Returns the entries that were new (duplicates are
   * dropped here) and schedules them. Only after this returns may the platform be acknowledged. `durability`
   * (default FULL, fsynced) may be NORMAL only where a commit lost to a power cut is fetched again from the
   * platform (Discord: the message and its history cursor go together, and the history after the cursor is read at
   * the next start).
   */
  record(
    items: IngressItem<T>[],
    cursor?: IngressCursor | IngressCursor[],
    opts: { durability?: 'FULL' | 'NORMAL' } = {},
  ): IngressItem<T>[] {
    if (this.closed) throw new Error('ingress is closed');
    const now = Date.now();
    const cursors = cursor === undefined ? [] : Array.isArray(cursor) ? cursor : [cursor];
    const dones = this.dones.take();
    let fresh: IngressItem<T>[];
    try {
      fresh = this.store.tx(() => {
        // The done marks of this turn ride in the same commit.
        this.dones.write(dones);
        const out: IngressItem<T>[] = [];
        for (const it of items) {
          const r = this.insert.run(it.messageId, it.chatId, JSON.stringify(it.payload), now);
          if (r.changes === 1) out.push(it);
        }
        // Each key read and written once per batch (a burst carries one cursor per message), applied in order.
        const values = new Map<string, string>();
        for (const c of cursors) {
          const stored = values.has(c.key) ? values.get(c.key) : this.store.getValue(c.key);
          values.set(c.key, typeof c.value === 'function' ? c.value(stored) : c.value);
        }
        for (const [key, value] of values) this.store.setValue(key, value);
        return out;
      }, opts.durability ?? 'FULL');
    } catch (e) {
      this.dones.restore(dones);
      throw e;
    }
    for (const it of fresh) this.schedule(it);
    return fresh;
  }

  /**
   * Records one item together with the others that arrive in the same turn of the event loop (one transaction and
   * one disk sync for a burst), and resolves once it is durable, with whether it was new (false: a duplicate,
   * dropped): for push transports (a socket) that acknowledge each message, which may acknowledge only after this
   * resolves. Rejects (nothing recorded) if the write fails. `cursor` (optional; one, or several) is written in that
   * same transaction, after the items, in the order the calls came. The batch is committed FULL (fsynced) unless
   * every call in it asked for `durability: 'NORMAL'` (see `record`).
   * @example socket.on('event', async (e) => { await ingress.recordSoon(toItem(e)); await e.ack(); });
   */
  recordSoon(
    item: IngressItem<T>,
    cursor?: IngressCursor | IngressCursor[],
    opts: { durability?: 'FULL' | 'NORMAL' } = {},
  ): Promise<boolean> {
    if (!this.batch) {
      const batch: NonNullable<Ingress<T>['batch']> = {
        items: [],
        cursors: [],
        durability: 'NORMAL',
        done: new Promise<Set<IngressItem<T>>>((resolve, reject) => {
          setImmediate(() => {
            this.batch = undefined;
            try {
              resolve(new Set(this.record(batch.items, batch.cursors, { durability: batch.durability })));
            } catch (e) {
              reject(e);
            }
          });
        }),
      };
      this.batch = batch;
    }
    const batch = this.batch;
    batch.items.push(item);
    if (Array.isArray(cursor)) batch.cursors.push(...cursor);
    else if (cursor) batch.cursors.push(cursor);
    if (opts.durability !== 'NORMAL') batch.durability = 'FULL';
    return batch.done.then((fresh) => fresh.has(item));
  }

  /** Schedules every entry recorded but not done (after a crash), oldest first. Returns how many. */
  recover(): number {
    this.flush();
    const rows = this.store.db
      .prepare("SELECT message_id, chat_id, payload FROM inbound WHERE state = 'recorded' ORDER BY seq")
      .all() as Array<{ message_id: string; chat_id: string; payload: string }>;
    for (const r of rows) this.schedule({ messageId: r.message_id, chatId: r.chat_id, payload: JSON.parse(r.payload) as T });
    if (rows.length) this.o.log.info(`Ingress: driving ${rows.length} message(s) recorded before the last stop again.`);
    return rows.length;
  }

  /** Entries not done yet. */
  open(): number {
    this.flush();
    return (this.store.db.prepare("SELECT COUNT(*) AS n FROM inbound WHERE state = 'recorded'").get() as { n: number }).n;
  }

  /** The recorded outcome of a message, if it is done. */
  outcome(messageId: string): string | undefined {
    this.flush();
    const row = this.store.db.prepare("SELECT outcome FROM inbound WHERE message_id = ? AND state = 'done'").get(messageId) as
      | { outcome: string | null }
      | undefined;
    return row ? (row.outcome ?? '') : undefined;
  }

  /**
   * The recorded payload of a message (handled or not), or undefined when it was never recorded: for the message a
   * new one replies to, read without asking the platform.
   */
  payload(messageId: string): T | undefined {
    const row = this.payloadOf.get(messageId) as { payload: string } | undefined;
    return row ? (JSON.parse(row.payload) as T) : undefined;
  }

  /** Resolves when every scheduled entry has been handled. */
  async idle(): Promise<void> {
    while (this.running.size) await Promise.all([...this.running]);
  }

  /** Stops scheduling; entries in flight finish, the rest stay recorded for the next start. */
  async close(): Promise<void> {
    this.closed = true;
    await this.idle();
  }

  private schedule(it: IngressItem<T>): void {
    const prev = this.chains.get(it.chatId) ?? Promise.resolve();
    let release!: () => void;
    const turn = new Promise<void>((resolve) => {
      release = resolve;
    });
    const previous = this.finished.get(it.chatId) ?? Promise.resolve();
    const run = prev.then(() => this.run(it, { ordered: release, previous }));
    // Finished (whatever the outcome) releases the chat too.
    void run.finally(release);
    this.chains.set(it.chatId, turn);
    const all = Promise.all([previous, run]).then(
      () => undefined,
      () => undefined,
    );
    this.finished.set(it.chatId, all);
    void all.then(() => {
      if (this.finished.get(it.chatId) === all) this.finished.delete(it.chatId);
    });
    this.running.add(run);
    void run.finally(() => this.running.delete(run));
    void turn.then(() => {
      if (this.chains.get(it.chatId) === turn) this.chains.delete(it.chatId);
    });
  }

  private async run(it: IngressItem<T>, turn: IngressTurn): Promise<void> {
    const max = this.o.maxAttempts ?? 5;
    let waited = 0;
    for (let attempt = 1; ; attempt++) {
      if (this.closed && (attempt > 1 || waited > 0)) return; // left recorded: the next start drives it
      try {
        const outcome = await this.o.handle(it, turn);
        this.done(outcome ?? 'handled', it.messageId);
        if (waited > 0) this.o.log.info(`Ingress: message ${it.messageId} went through once the queue was back.`);
        return;
      } catch (e) {
        const msg = errorMessage(e);
        if (QUEUE_AWAY.has(errorCodeOf(e) ?? '')) {
          // The queue cannot be reached (the shared queue's Redis is down, the file queue stays locked): the
          // message is fine, so it waits for the queue without using up its attempts, however long that takes.
          const wait = Math.min(30_000, (this.o.retryBaseMs ?? 500) * 2 ** Math.min(waited, 6));
          if (waited++ === 0) this.o.log.warn(`Ingress: message ${it.messageId} waits for the queue (${msg}); it is kept and tried again.`);
          attempt--;
          await new Promise((r) => setTimeout(r, wait));
          continue;
        }
        if (attempt >= max) {
          this.o.log.error(`Ingress: message ${it.messageId} failed ${attempt} times and is dropped: ${msg}`);
          this.done(`failed: ${msg.slice(0, 200)}`, it.messageId);
          return;
        }
        const wait = (this.o.retryBaseMs ?? 500) * 2 ** (attempt - 1);
        this.o.log.warn(`Ingress: message ${it.messageId} failed (${msg}); trying again in ${wait} ms.`);
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }
}
