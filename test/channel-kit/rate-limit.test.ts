/**
 * The rate limiter's per-chat state stays bounded in a daemon that runs for months: buckets refilled to capacity and
 * pauses that are over are dropped once a map passes RATE_SWEEP_AT, and a chat still within its window keeps its limits.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RATE_SWEEP_AT, RateLimiter, TokenBucket } from '../../sdk/channel-kit/rate-limit.js';

/** Per-chat limits as Telegram's; the bot-wide bucket out of the way (it is not what is tested). */
const policy = {
  send: { capacity: 5, perSecond: 1 },
  edit: { capacity: 2, perSecond: 0.5 },
  global: { capacity: 1e9, perSecond: 1e9 },
};

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(new Date('2030-01-01T00:00:00Z'));
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('rate limiter memory', () => {
  it('drops full buckets and past pauses of idle chats; a chat that just sent keeps its limits', () => {
    const limiter = new RateLimiter(policy);
    const old = Math.floor(RATE_SWEEP_AT * 1.5);
    for (let i = 0; i < old; i++) {
      expect(limiter.tryAcquire(`c${i}`, 'send')).toBe(true);
      expect(limiter.tryAcquire(`c${i}`, 'edit')).toBe(true);
      limiter.pause(`c${i}`, 1000);
    }
    // Pauses that still hold and buckets still in use survive the first sweep (at RATE_SWEEP_AT).
    expect(limiter.sizes()).toEqual({ send: old, edit: old, paused: old });
    limiter.pause('held', 60_000);

    vi.advanceTimersByTime(10_000); // every old bucket has refilled, every old pause is over
    // c0 sends its whole burst (and edits twice) now: it is empty, not reset by the sweep below.
    for (let i = 0; i < 5; i++) expect(limiter.tryAcquire('c0', 'send')).toBe(true);
    for (let i = 0; i < 2; i++) expect(limiter.tryAcquire('c0', 'edit')).toBe(true);
    expect(limiter.tryAcquire('c0', 'send')).toBe(false);

    const fresh = RATE_SWEEP_AT;
    for (let i = 0; i < fresh; i++) {
      limiter.tryAcquire(`n${i}`, 'send');
      limiter.tryAcquire(`n${i}`, 'edit');
      limiter.pause(`n${i}`, 1000);
    }
    const sizes = limiter.sizes();
    // Without the sweep each map would hold every chat ever seen (old + fresh + 1).
    for (const n of [sizes.send, sizes.edit, sizes.paused]) expect(n).toBeLessThanOrEqual(fresh + 1);
    expect(sizes.send).toBeGreaterThan(0);

    // The limits still hold where they apply.
    expect(limiter.tryAcquire('c0', 'send')).toBe(false);
    expect(limiter.tryAcquire('c0', 'edit')).toBe(false);
    expect(limiter.tryAcquire('held', 'send')).toBe(false); // paused for another 50 s
    expect(limiter.tryAcquire('n1', 'send')).toBe(false); // paused for another second
    // A dropped chat starts again from a full bucket, as a new one would.
    for (let i = 0; i < 5; i++) expect(limiter.tryAcquire('c1', 'send')).toBe(true);
    expect(limiter.tryAcquire('c1', 'send')).toBe(false);

    vi.advanceTimersByTime(1000);
    expect(limiter.tryAcquire('c0', 'send')).toBe(true); // one token back after a second
    expect(limiter.tryAcquire('c0', 'send')).toBe(false);
  });

  it('a sweep that can drop nothing is not repeated at every new chat (O(1) per send on average)', () => {
    const limiter = new RateLimiter(policy);
    const { peek } = TokenBucket.prototype;
    let peeks = 0;
    TokenBucket.prototype.peek = function (this: TokenBucket, now?: number) {
      peeks++;
      return peek.call(this, now);
    };
    try {
      const chats = RATE_SWEEP_AT * 10;
      // All at one instant: no bucket is full, every sweep keeps everything.
      for (let i = 0; i < chats; i++) expect(limiter.tryAcquire(`c${i}`, 'send')).toBe(true);
      expect(limiter.sizes().send).toBe(chats);
      // Four peeks per send (chat and global, each peeked then taken); the sweeps add about 2 per chat in all.
      expect(peeks).toBeLessThan(chats * 7);
    } finally {
      TokenBucket.prototype.peek = peek;
    }
  });

  it('acquire after a long pause takes its token from the chat bucket a sweep left, not a dropped one', async () => {
    vi.useRealTimers();
    const limiter = new RateLimiter({ send: { capacity: 1, perSecond: 1 }, edit: policy.edit, global: policy.global });
    limiter.pause('p', 30);
    const waiting = limiter.acquire('p', 'send');
    // Meanwhile the map is swept: p's bucket, untouched while it waits out the pause, is full and dropped.
    for (let i = 0; i < RATE_SWEEP_AT; i++) limiter.tryAcquire(`x${i}`, 'send');
    await new Promise((r) => setTimeout(r, 40));
    await waiting;
    // One bucket for p: the acquire took its only token, so a send right after finds none.
    expect(limiter.tryAcquire('p', 'send')).toBe(false);
  });
});
