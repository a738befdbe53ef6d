/**
 * Per-platform, per-chat token buckets for sends and edits, a global bucket per bot, and the one retry loop that
 * honours the platform's `retry_after` / `Retry-After`: a 429 pauses the chat (or the whole bot) and the same
 * chunk is tried again, so nothing is dropped or reordered.
 */
import { sleep } from '../retry.js';

/** Capacity (burst) and refill rate of one bucket. */
export interface BucketSpec {
  capacity: number;
  perSecond: number;
}

export interface RatePolicy {
  send: BucketSpec;
  edit: BucketSpec;
  /** Across all chats of one bot. */
  global: BucketSpec;
}

/**
 * Published limits. Telegram: about one message per second per chat (short bursts tolerated), 30 per second
 * per bot; edits count as messages. Discord: 5 per 5 s per channel, 50 per second per bot. Slack: about one
 * message per second per channel (chat.postMessage, special tier), bursts tolerated.
 */
export const RATE_POLICIES: Record<'telegram' | 'discord' | 'slack' | 'whatsapp', RatePolicy> = {
  telegram: { send: { capacity: 5, perSecond: 1 }, edit: { capacity: 2, perSecond: 0.5 }, global: { capacity: 30, perSecond: 30 } },
  discord: { send: { capacity: 5, perSecond: 1 }, edit: { capacity: 3, perSecond: 0.6 }, global: { capacity: 50, perSecond: 50 } },
  slack: { send: { capacity: 3, perSecond: 1 }, edit: { capacity: 3, perSecond: 0.5 }, global: { capacity: 20, perSecond: 20 } },
  whatsapp: { send: { capacity: 5, perSecond: 1 }, edit: { capacity: 2, perSecond: 0.5 }, global: { capacity: 20, perSecond: 20 } },
};

/**
 * A map of a limiter's per-chat state (send buckets, edit buckets, pauses) is swept when a new chat would take it past
 * this many entries: buckets refilled to capacity (they behave exactly as new ones) and pauses that are over are
 * dropped. Each sweep sets the next one at twice what it kept (at least this), so a send costs O(1) on average.
 */
export const RATE_SWEEP_AT = 1000;

/** A token bucket; `take` returns 0 when a token was taken, else the milliseconds until one is available. */
export class TokenBucket {
  private tokens: number;
  private at = Date.now();
  constructor(private readonly spec: BucketSpec) {
    this.tokens = spec.capacity;
  }
  /** Tokens available at `now` (refilled), none taken. */
  peek(now = Date.now()): number {
    this.tokens = Math.min(this.spec.capacity, this.tokens + (Math.max(0, now - this.at) / 1000) * this.spec.perSecond);
    this.at = Math.max(this.at, now);
    return this.tokens;
  }
  /** Refilled to capacity at `now`: it acts exactly as a new bucket would. */
  full(now = Date.now()): boolean {
    return this.peek(now) >= this.spec.capacity;
  }
  take(now = Date.now()): number {
    this.peek(now);
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - this.tokens) / this.spec.perSecond) * 1000);
  }
}

/** What the platform adapter makes of an error. */
export type SendErrorDecision =
  | { retry: true; afterMs?: number /** the wait applies to every chat (a bot-wide flood limit) */; global?: boolean }
  | { retry: false };

export interface RunOptions {
  classify(error: unknown): SendErrorDecision;
  signal?: AbortSignal;
  /** Retries of errors that are not a 429 with a wait (network, 5xx), default 4. */
  retries?: number;
  onWait?(ms: number, error: unknown): void;
}

/** `retrying` called without a failure to handle first (any value, `undefined` included, may be thrown). */
const NO_ERROR: unique symbol = Symbol('no error');

/**
 * @example
 * const limiter = new RateLimiter(RATE_POLICIES.telegram);
 * const msg = await limiter.run(chatId, 'send', () => api.sendMessage(chatId, html), { classify: telegramErrorDecision });
 */
export class RateLimiter {
  /** Per kind, per chat (no key string built per send). */
  private readonly buckets = { send: new Map<string, TokenBucket>(), edit: new Map<string, TokenBucket>() };
  private readonly global: TokenBucket;
  private readonly pausedUntil = new Map<string, number>();
  private globalPauseUntil = 0;
  /** The size at which each map is swept next (see RATE_SWEEP_AT). */
  private readonly sweepAt = { send: RATE_SWEEP_AT, edit: RATE_SWEEP_AT, paused: RATE_SWEEP_AT };

  constructor(private readonly policy: RatePolicy) {
    this.global = new TokenBucket(policy.global);
  }

  /** Takes the token for a send (or edit) to `chatId` if one is there right now, without waiting. */
  tryAcquire(chatId: string, kind: 'send' | 'edit'): boolean {
    const now = Date.now();
    if (Math.max(this.globalPauseUntil, this.pausedUntil.get(chatId) ?? 0) > now) return false;
    const bucket = this.bucket(chatId, kind);
    if (bucket.peek(now) < 1 || this.global.peek(now) < 1) return false;
    bucket.take(now);
    this.global.take(now);
    return true;
  }

  private bucket(chatId: string, kind: 'send' | 'edit'): TokenBucket {
    const buckets = this.buckets[kind];
    let bucket = buckets.get(chatId);
    if (!bucket) {
      if (buckets.size >= this.sweepAt[kind]) {
        const now = Date.now();
        for (const [id, b] of buckets) if (b.full(now)) buckets.delete(id);
        this.sweepAt[kind] = Math.max(RATE_SWEEP_AT, 2 * buckets.size);
      }
      buckets.set(chatId, (bucket = new TokenBucket(this.policy[kind])));
    }
    return bucket;
  }

  /** How many chats each map holds state for (for tests and diagnostics). */
  sizes(): { send: number; edit: number; paused: number } {
    return { send: this.buckets.send.size, edit: this.buckets.edit.size, paused: this.pausedUntil.size };
  }

  /** Waits until a send (or edit) to `chatId` is allowed and takes the token. */
  async acquire(chatId: string, kind: 'send' | 'edit', signal?: AbortSignal): Promise<void> {
    for (;;) {
      // Looked up after every wait: a sweep meanwhile may have dropped a bucket that refilled during a long pause.
      const bucket = this.bucket(chatId, kind);
      const now = Date.now();
      const paused = Math.max(this.globalPauseUntil, this.pausedUntil.get(chatId) ?? 0) - now;
      if (paused > 0) {
        await sleep(paused, signal);
        continue;
      }
      const wait = bucket.take(now);
      if (wait > 0) {
        await sleep(wait, signal);
        continue;
      }
      const g = this.global.take(now);
      if (g > 0) {
        // Give the chat token back by waiting for the global one instead of dropping ours.
        await sleep(g, signal);
        while (this.global.take() > 0) await sleep(20, signal);
      }
      return;
    }
  }

  /** Holds every send to `chatId` (or, without it, to all chats) for `ms`. */
  pause(chatId: string | undefined, ms: number): void {
    const now = Date.now();
    const until = now + ms;
    if (chatId === undefined) {
      this.globalPauseUntil = Math.max(this.globalPauseUntil, until);
      return;
    }
    const was = this.pausedUntil.get(chatId);
    if (was === undefined && this.pausedUntil.size >= this.sweepAt.paused) {
      for (const [id, at] of this.pausedUntil) if (at <= now) this.pausedUntil.delete(id);
      this.sweepAt.paused = Math.max(RATE_SWEEP_AT, 2 * this.pausedUntil.size);
    }
    this.pausedUntil.set(chatId, Math.max(was ?? 0, until));
  }

  /** Runs one platform call under the limits; 429s are waited out and retried without limit until `signal`. */
  run<T>(chatId: string, kind: 'send' | 'edit', fn: () => Promise<T>, o: RunOptions): Promise<T> {
    // Most sends find a token and succeed: one call, no extra promise or turn of the event loop for them.
    if (!this.tryAcquire(chatId, kind)) return this.retrying(chatId, kind, fn, o, NO_ERROR);
    let first: Promise<T>;
    try {
      first = fn();
    } catch (e) {
      first = Promise.reject(e);
    }
    return first.then(undefined, (e: unknown) => this.retrying(chatId, kind, fn, o, e));
  }

  /** The slow path of `run`: after a failure (`failed`), waits for what the error asks; then for a token; retries. */
  private async retrying<T>(chatId: string, kind: 'send' | 'edit', fn: () => Promise<T>, o: RunOptions, failed: unknown): Promise<T> {
    let failures = 0;
    let error = failed;
    for (;;) {
      if (error !== NO_ERROR) {
        const e = error;
        error = NO_ERROR;
        const d = o.classify(e);
        if (!d.retry || o.signal?.aborted) throw e;
        let wait: number;
        if (d.afterMs !== undefined) {
          wait = d.afterMs;
          this.pause(d.global ? undefined : chatId, wait);
        } else {
          if (++failures > (o.retries ?? 4)) throw e;
          wait = Math.min(8000, 250 * 2 ** failures) * (0.5 + Math.random() / 2);
        }
        o.onWait?.(wait, e);
        await sleep(wait, o.signal);
      }
      if (!this.tryAcquire(chatId, kind)) await this.acquire(chatId, kind, o.signal);
      try {
        return await fn();
      } catch (e) {
        error = e;
      }
    }
  }
}
