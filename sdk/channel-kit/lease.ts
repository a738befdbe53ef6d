/**
 * "Who owns this connection" across machines: when the queue is shared through Redis (queueRedisUrl), a channel's
 * connection is held by a lease in that Redis instead of a lock file, so that two machines configured with the
 * same bot token do not both poll it (Telegram answers both with 409 and splits the updates; Discord and Slack
 * would deliver every event twice).
 *
 * - Taken with `SET NX PX`, renewed every third of its length by a compare-and-extend script: a holder can only
 *   extend its own lease, never one another process took after it lapsed.
 * - A holder that could not renew for two thirds of the lease gives the connection up (the supervisor closes it and
 *   waits for the lease again) before the lease can run out and another process take it: at no time do two
 *   processes hold the connection, as long as their clocks run at about the same speed.
 * - Released on stop, so another machine takes over at once; a killed holder's lease runs out by itself.
 * - Fenced: each time the lease is taken (not renewed) it gets a fencing token, one more than the last one
 *   issued for this channel and credential (`INCR <key>:fence` in the same script as the `SET NX`), stored in the
 *   lease's value. A delivery that starts while this process holds the lease is fenced by that hold: before each
 *   chunk goes to the platform, `check` asks Redis (one round trip, a script) whether the lease still carries this
 *   holder's value and token. A holder that was paused past its lease (SIGSTOP, a long block of the event loop)
 *   while another process took the lease (and a newer token) has its send refused with `KEEL_E_LEASE_LOST`, and
 *   gives the connection up. The platforms cannot check a token themselves: a chunk already on its way when the
 *   lease lapsed still arrives.
 *
 * ioredis is imported only when a lease is taken.
 */
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis as RedisClient } from 'ioredis';
import { errorMessage, PluginError } from '../errors.js';
import { type LockResult, OwnerLock } from './owner-lock.js';

/** One hold of a lease: its key, the value this holder stored there, and the fencing token in that value. */
export interface LeaseHold {
  key: string;
  value: string;
  token: number;
}

/**
 * What the outbox needs of a fenced lease: the hold a delivery starts under, the check before each chunk, and
 * what to do when something else (the shared ledger's claim) found the hold stale.
 */
export interface SendFence {
  /** This process's current hold, or undefined while it does not hold the lease (its sends are not fenced). */
  hold(): LeaseHold | undefined;
  /** Resolves when `hold` is still the lease's (the newest token); rejects with a `LeaseLostError` otherwise. */
  check(hold: LeaseHold): Promise<void>;
  /** `hold` was found stale elsewhere: the connection is given up (once) if it is still the current hold. */
  stale(hold: LeaseHold, why: string): void;
}

/** A send refused because the sender no longer holds the connection's lease with the newest token. */
export class LeaseLostError extends PluginError<'KEEL_E_LEASE_LOST'> {
  constructor(message: string) {
    super('KEEL_E_LEASE_LOST', message);
    this.name = 'LeaseLostError';
  }
}

/** What the supervisor needs of a lock: the file lock and the Redis lease both provide it. */
export interface ConnectionLock {
  acquire(): LockResult | Promise<LockResult>;
  release(): void | Promise<void>;
  /** A lease that can be lost while held calls `lost` (once per acquire) when it can no longer be sure it holds it. */
  watch?(lost: (why: string) => void): void;
  /** A lease with fencing tokens (the Redis lease): see `SendFence`. */
  hold?(): LeaseHold | undefined;
  check?(hold: LeaseHold): Promise<void>;
  stale?(hold: LeaseHold, why: string): void;
}

/**
 * KEYS[1]: the lease, KEYS[2]: its fence counter. ARGV[1]: this holder's value up to its token, ARGV[2]: the
 * lease's length. Taken: a new token, the full value stored and returned. Held by this holder already (a
 * reconnect): extended, same token. Held by another: its value.
 */
const ACQUIRE = `
local held = redis.call('GET', KEYS[1])
if held then
  if string.sub(held, 1, string.len(ARGV[1])) == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
  return held
end
local value = ARGV[1] .. redis.call('INCR', KEYS[2]) .. '}'
redis.call('SET', KEYS[1], value, 'PX', ARGV[2])
return value
`;
/** 1 while the lease holds ARGV[1] (this holder, this token), else what it holds ('' when it lapsed). */
const CHECK = `local v = redis.call('GET', KEYS[1]) if v == ARGV[1] then return 1 end return v or ''`;
const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) else return 0 end`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;

export interface RedisLeaseOptions {
  url: string;
  prefix: string;
  channel: string;
  credential: string;
  leaseMs: number;
}

/**
 * @example
 * const lease = new RedisLease({ url: 'redis://127.0.0.1:6379', prefix: 'keel:', channel: 'chatA', credential: token, leaseMs: 15_000 });
 * const r = await lease.acquire(); // { ok: true } or { ok: false, ownerPid, ownerHost }
 */
export class RedisLease implements ConnectionLock, SendFence {
  readonly key: string;
  /** `<key>:fence`: the last token issued (never expires, so tokens only grow). */
  readonly fenceKey: string;
  /** This holder's value up to its token (`{"host":…,"fence":`): the token and `}` are added when taken. */
  private readonly base: string;
  /** The value stored at the last acquire (renewed and released by it). */
  private value: string | undefined;
  /** The current hold; cleared when the lease is given up or released. */
  private current: LeaseHold | undefined;
  private client: RedisClient | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastRenewed = 0;
  private lost: ((why: string) => void) | undefined;

  constructor(private readonly o: RedisLeaseOptions) {
    // The key tells credentials apart without revealing them.
    const tag = createHash('sha256').update(o.credential).digest('hex').slice(0, 12);
    this.key = `${o.prefix}channel:${o.channel}:${tag}`;
    this.fenceKey = `${this.key}:fence`;
    const who = JSON.stringify({ host: hostname(), pid: process.pid, id: randomBytes(6).toString('hex'), since: new Date().toISOString() });
    this.base = `${who.slice(0, -1)},"fence":`;
  }

  /** The fencing token of the current hold, or undefined while this process does not hold the lease. */
  get token(): number | undefined {
    return this.current?.token;
  }

  private async redis(): Promise<RedisClient> {
    if (this.client) return this.client;
    const { Redis } = await import('ioredis');
    const client = new Redis(this.o.url, { lazyConnect: true, connectTimeout: 5000, maxRetriesPerRequest: 1 });
    client.on('error', () => {}); // reported through acquire's and renew's results
    // A first connection that fails would otherwise leave ioredis dialling again on its own for good (one more
    // client every retry while Redis is down).
    await client.connect().catch((e: unknown) => {
      client.disconnect();
      throw e;
    });
    this.client = client;
    return client;
  }

  async acquire(): Promise<LockResult> {
    try {
      const redis = await this.redis();
      const holder = (await redis.eval(ACQUIRE, 2, this.key, this.fenceKey, this.base, this.o.leaseMs)) as string;
      if (holder.startsWith(this.base)) {
        const token = Number(holder.slice(this.base.length, -1));
        this.value = holder;
        if (this.current?.value !== holder) this.current = { key: this.key, value: holder, token };
        this.lastRenewed = Date.now();
        this.schedule();
        return { ok: true };
      }
      try {
        const h = JSON.parse(holder || '{}') as { pid?: unknown; host?: unknown };
        return { ok: false, ownerPid: typeof h.pid === 'number' ? h.pid : 0, ...(typeof h.host === 'string' ? { ownerHost: h.host } : {}) };
      } catch {
        return { ok: false, ownerPid: 0 };
      }
    } catch (e) {
      return { ok: false, ownerPid: 0, why: `cannot reach Redis for the connection's lease (${errorMessage(e)})` };
    }
  }

  watch(lost: (why: string) => void): void {
    this.lost = lost;
  }

  hold(): LeaseHold | undefined {
    return this.current;
  }

  /**
   * Before a chunk of a delivery that started under `hold` goes to the platform: one script asks Redis whether the
   * lease still holds this value (this holder, this token). Refused (`LeaseLostError`) when it does not, or when
   * this process gave the lease up since; the connection is then given up. Redis unreachable: allowed while the
   * lease was renewed less than two thirds of its length ago (the rule that keeps the connection itself open).
   */
  async check(hold: LeaseHold): Promise<void> {
    const client = this.client;
    if (this.current?.value !== hold.value || !client) throw this.refusal(hold, 'this process has given the connection up since');
    let now: unknown;
    try {
      now = await client.eval(CHECK, 1, this.key, hold.value);
    } catch (e) {
      const since = Date.now() - this.lastRenewed;
      if (since <= (this.o.leaseMs * 2) / 3) return;
      throw this.lose(hold, `cannot check the connection's lease, last renewed ${since} ms ago (${errorMessage(e)})`);
    }
    if (now === 1) return;
    throw this.lose(hold, describeHolder(now));
  }

  stale(hold: LeaseHold, why: string): void {
    this.lose(hold, why);
  }

  /** Gives the connection up if `hold` is still the current hold; the error a refused send carries. */
  private lose(hold: LeaseHold, why: string): LeaseLostError {
    if (this.current?.value === hold.value) {
      this.current = undefined;
      this.giveUp(why);
    }
    return this.refusal(hold, why);
  }

  private refusal(hold: LeaseHold, why: string): LeaseLostError {
    return new LeaseLostError(
      `${this.o.channel}: send refused: this process no longer holds the connection's lease with the newest fencing token (it held token ${hold.token}; ${why}). The message stays unsent in the delivery ledger.`,
    );
  }

  private giveUp(why: string): void {
    this.current = undefined;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const cb = this.lost;
    this.lost = undefined;
    cb?.(why);
  }

  private schedule(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.renew(), Math.max(100, Math.floor(this.o.leaseMs / 3)));
    this.timer.unref();
  }

  private async renew(): Promise<void> {
    try {
      if (!this.current) return;
      const ok = (await this.client!.eval(RENEW, 1, this.key, this.current.value, this.o.leaseMs)) as number;
      if (ok === 1) this.lastRenewed = Date.now();
      else this.giveUp('another process holds the connection now (this one could not renew its lease in time)');
    } catch (e) {
      if (Date.now() - this.lastRenewed > (this.o.leaseMs * 2) / 3)
        this.giveUp(`could not renew the connection's lease for ${Date.now() - this.lastRenewed} ms (${errorMessage(e)})`);
    }
  }

  async release(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.lost = undefined;
    this.current = undefined;
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    if (this.value) await client.eval(RELEASE, 1, this.key, this.value).catch(() => {});
    await client.quit().catch(() => client.disconnect());
  }
}

/** Who holds the lease now, from the value a check found there ('' when it lapsed). */
function describeHolder(value: unknown): string {
  if (typeof value !== 'string' || !value) return 'the lease lapsed';
  try {
    const h = JSON.parse(value) as { pid?: unknown; host?: unknown; fence?: unknown };
    const who = typeof h.pid === 'number' ? ` (pid ${h.pid}${typeof h.host === 'string' ? ` on ${h.host}` : ''})` : '';
    return `another process${who} holds it now${typeof h.fence === 'number' ? ` with token ${h.fence}` : ''}`;
  } catch {
    return 'another process holds it now';
  }
}

/**
 * The lock for a channel's connection: a Redis lease when the queue is shared through Redis (several machines),
 * else the lock file under `$KEEL_HOME`.
 * @example const lock = connectionLock(ctx, 'chatA', token);
 */
export function connectionLock(
  ctx: { config: { get(key: string): unknown }; home: string },
  channel: string,
  credential: string,
): ConnectionLock {
  const url = ctx.config.get('queueRedisUrl');
  if (typeof url === 'string' && url) {
    const prefix = ctx.config.get('queueRedisPrefix');
    const lease = ctx.config.get('queueWorkerLeaseSeconds');
    return new RedisLease({
      url,
      prefix: typeof prefix === 'string' && prefix ? prefix : 'keel:',
      channel,
      credential,
      leaseMs: (typeof lease === 'number' && lease > 0 ? lease : 15) * 1000,
    });
  }
  return new OwnerLock(ctx.home, channel, credential);
}
