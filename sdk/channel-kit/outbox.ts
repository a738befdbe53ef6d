/**
 * The outbound path every channel shares: per-chat order, the delivery ledger, the rate limiter.
 */
import { errorMessage } from '../errors.js';
import type { Json, Logger } from '../types.js';
import type { ChunkSender, DeliveryLedger } from './ledger.js';
import type { RateLimiter, SendErrorDecision } from './rate-limit.js';

export interface OutboxOptions {
  ledger: DeliveryLedger;
  limiter: RateLimiter;
  /** The platform's error classification (429 with its wait, transient, permanent). */
  classify(error: unknown): SendErrorDecision;
  log: Logger;
  signal?: AbortSignal;
}

/**
 * @example
 * const outbox = new Outbox({ ledger, limiter, classify, log: ctx.log });
 * const ids = await outbox.deliver(`${action.id}:r0`, chatId, chunks, (c) => sendOne(chatId, c));
 */
export class Outbox {
  /** The last delivery queued per chat (the next one starts after it settles, either way). */
  private readonly chains = new Map<string, Promise<unknown>>();

  constructor(private readonly o: OutboxOptions) {}

  /**
   * Delivers the chunks of one message under `key`: in order after earlier messages to the same chat, each chunk
   * ledgered before it is sent, waits of the platform honoured, a chunk that fails for good leaving the rest
   * pending in the ledger (sent by `resumeAll` at the next start) and the error thrown.
   */
  deliver<C extends Json>(key: string, chatId: string, chunks: C[], send: ChunkSender<C>): Promise<string[]> {
    return this.serial(chatId, () =>
      this.o.ledger.deliver<C>(key, chatId, chunks, (c, i, ch, k) =>
        this.o.limiter.run(ch, 'send', () => send(c, i, ch, k), {
          classify: this.o.classify,
          ...(this.o.signal ? { signal: this.o.signal } : {}),
          onWait: (ms, e) => this.o.log.warn(`Send to ${ch} waits ${Math.round(ms)} ms (${errorMessage(e)}).`),
        }),
      ),
    );
  }

  /** An edit under the edit bucket of the chat (not ledgered: an edit repeated is harmless). */
  edit<T>(chatId: string, fn: () => Promise<T>): Promise<T> {
    return this.o.limiter.run(chatId, 'edit', fn, { classify: this.o.classify, ...(this.o.signal ? { signal: this.o.signal } : {}) });
  }

  /** Sends what a crash left unconfirmed in the ledger. Returns how many messages it resumed. */
  async resumeAll<C extends Json>(send: ChunkSender<C>): Promise<number> {
    const open = this.o.ledger.unfinished();
    for (const { key, chatId } of open) {
      try {
        await this.serial(chatId, () =>
          this.o.ledger.resume<C>(key, (c, i, ch, k) =>
            this.o.limiter.run(ch, 'send', () => send(c, i, ch, k), { classify: this.o.classify }),
          ),
        );
      } catch (e) {
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
