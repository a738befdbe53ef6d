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
 *
 * The platforms cannot check a fencing token, so none is issued: the guarantee comes from the holder stopping
 * first. ioredis is imported only when a lease is taken.
 */
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis as RedisClient } from 'ioredis';
import { errorMessage } from '../errors.js';
import { type LockResult, OwnerLock } from './owner-lock.js';

/** What the supervisor needs of a lock: the file lock and the Redis lease both provide it. */
export interface ConnectionLock {
  acquire(): LockResult | Promise<LockResult>;
  release(): void | Promise<void>;
  /** A lease that can be lost while held calls `lost` (once per acquire) when it can no longer be sure it holds it. */
  watch?(lost: (why: string) => void): void;
}

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
export class RedisLease implements ConnectionLock {
  readonly key: string;
  private readonly value: string;
  private client: RedisClient | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastRenewed = 0;
  private lost: ((why: string) => void) | undefined;

  constructor(private readonly o: RedisLeaseOptions) {
    // The key tells credentials apart without revealing them.
    const tag = createHash('sha256').update(o.credential).digest('hex').slice(0, 12);
    this.key = `${o.prefix}channel:${o.channel}:${tag}`;
    this.value = JSON.stringify({
      host: hostname(),
      pid: process.pid,
      id: randomBytes(6).toString('hex'),
      since: new Date().toISOString(),
    });
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
      const set = await redis.set(this.key, this.value, 'PX', this.o.leaseMs, 'NX');
      const holder = set === 'OK' ? this.value : await redis.get(this.key);
      if (holder === this.value) {
        this.lastRenewed = Date.now();
        this.schedule();
        return { ok: true };
      }
      try {
        const h = JSON.parse(holder ?? '{}') as { pid?: unknown; host?: unknown };
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

  private giveUp(why: string): void {
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
      const ok = (await this.client!.eval(RENEW, 1, this.key, this.value, this.o.leaseMs)) as number;
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
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    await client.eval(RELEASE, 1, this.key, this.value).catch(() => {});
    await client.quit().catch(() => client.disconnect());
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
