/**
 * The outbound path every channel shares: per-chat order, the delivery ledger, the rate limiter.
 */
import { errorMessage } from '../errors.js';
import type { Json, Logger } from '../types.js';
import { type LeaseHold, LeaseLostError, type SendFence } from './lease.js';
import type { ChunkSender, DeliveryLedger } from './ledger.js';
import type { RateLimiter, SendErrorDecision } from './rate-limit.js';

export interface OutboxOptions {
  ledger: DeliveryLedger;
  limiter: RateLimiter;
  /** The platform's error classification (429 with its wait, transient, permanent). */
  classify(error: unknown): SendErrorDecision;
  log: Logger;
  signal?: AbortSignal;
  /**
   * The connection's lease when it has fencing tokens (the Redis lease, several machines): a delivery that starts
   * while this process holds it is fenced by that hold, checked in Redis before each chunk (and at the shared
   * ledger's claim). Without it (the lock file, one machine) nothing is checked.
   */
  fence?: SendFence;
}

/**
 * @example
 * const outbox = new Outbox({ ledger, limiter, classify, log: ctx.log });
 * const ids = await outbox.deliver(`${action.id}:r0`, chatId, chunks, (c) => sendOne(chatId, c));
 */
export class Outbox {
  /** The last delivery queued per chat (the next one starts after it settles, either way). */
  private readonly chains = new Map<string, Promise<unknown>>();
  /** The token of the last hold whose refusal was logged (each lost hold is logged once). */
  private refusedToken: number | undefined;
  /** A refused send is not retried: the platform's classification is not asked. */
  private readonly classify = (e: unknown): SendErrorDecision => (e instanceof LeaseLostError ? { retry: false } : this.o.classify(e));

  constructor(private readonly o: OutboxOptions) {}

  /** `send` behind the fence of `hold`: the lease is checked before every attempt (a retry after a 429 included). */
  private fenced<C extends Json>(send: ChunkSender<C>, hold: LeaseHold | undefined): ChunkSender<C> {
    const fence = this.o.fence;
    if (!fence || !hold) return send;
    return (c, i, ch, k) => fence.check(hold).then(() => send(c, i, ch, k));
  }

  /** A delivery under `hold` that failed: a refusal gives the connection up (if the lease did not already) and is logged once. */
  private refused(hold: LeaseHold, e: unknown): unknown {
    if (!(e instanceof LeaseLostError)) return e;
    this.o.fence?.stale(hold, 'a send found that another process holds the lease now');
    if (this.refusedToken !== hold.token) {
      this.refusedToken = hold.token;
      this.o.log.warn(e.message);
    }
    return e;
  }

  /**
   * Delivers the chunks of one message under `key`: in order after earlier messages to the same chat, each chunk
   * ledgered before it is sent, waits of the platform honoured, a chunk that fails for good leaving the rest
   * pending in the ledger (sent by `resumeAll` at the next start) and the error thrown.
   */
  deliver<C extends Json>(key: string, chatId: string, chunks: C[], send: ChunkSender<C>): Promise<string[]> {
    // The hold the decision to send was made under: every chunk of this message checks that it is still the newest.
    const hold = this.o.fence?.hold();
    const one = this.fenced(send, hold);
    const p = this.serial(chatId, () =>
      this.o.ledger.deliver<C>(
        key,
        chatId,
        chunks,
        (c, i, ch, k) =>
          this.o.limiter.run(ch, 'send', () => one(c, i, ch, k), {
            classify: this.classify,
            ...(this.o.signal ? { signal: this.o.signal } : {}),
            onWait: (ms, e) => this.o.log.warn(`Send to ${ch} waits ${Math.round(ms)} ms (${errorMessage(e)}).`),
          }),
        hold,
      ),
    );
    return hold
      ? p.catch((e: unknown) => {
          throw this.refused(hold, e);
        })
      : p;
  }

  /** An edit under the edit bucket of the chat (not ledgered: an edit repeated is harmless). */
  edit<T>(chatId: string, fn: () => Promise<T>): Promise<T> {
    return this.o.limiter.run(chatId, 'edit', fn, { classify: this.o.classify, ...(this.o.signal ? { signal: this.o.signal } : {}) });
  }

  /** Sends what a crash left unconfirmed in the ledger. Returns how many messages it resumed. */
  async resumeAll<C extends Json>(send: ChunkSender<C>): Promise<number> {
    const open = this.o.ledger.unfinished();
    const hold = this.o.fence?.hold();
    const one = this.fenced(send, hold);
    for (const { key, chatId } of open) {
      try {
        await this.serial(chatId, () =>
          this.o.ledger.resume<C>(
            key,
            (c, i, ch, k) => this.o.limiter.run(ch, 'send', () => one(c, i, ch, k), { classify: this.classify }),
            hold,
          ),
        );
      } catch (e) {
        if (hold && e instanceof LeaseLostError) {
          // The rest waits for this process's next hold of the connection.
          this.refused(hold, e);
          break;
        }
        this.o.log.warn(`Could not finish an interrupted delivery to ${chatId}: ${errorMessage(e)}`);
      }
    }
    if (open.length) this.o.log.info(`Delivery: ${open.length} interrupted message(s) resumed.`);
    return open.length;
  }

  private serial<T>(chatId: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.chains.get(chatId);
    // Nothing queued for this chat: start at once rather than a turn of the event loop later.
    let next: Promise<T>;
    if (prev) next = prev.then(fn, fn);
    else {
      try {
        next = fn();
      } catch (e) {
        next = Promise.reject(e);
      }
    }
    this.chains.set(chatId, next);
    // The last one out clears the chat (handled both ways, so a failure is the caller's alone to see).
    const done = () => {
      if (this.chains.get(chatId) === next) this.chains.delete(chatId);
    };
    next.then(done, done);
    return next;
  }
}
