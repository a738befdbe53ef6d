/**
 * Two machines with the same bot token and a queue shared through Redis (queueRedisUrl): the connection is held
 * by a lease in that Redis, so only one of them polls (the loopback Bot API answers a second poller with 409, as
 * Telegram does). The other takes over when the holder stops; a holder whose lease was taken gives the connection
 * up.
 */
import type { Redis } from 'ioredis';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisLease } from '../../../sdk/channel-kit/index.js';
import { startFakeTelegram, type FakeTelegram } from '../../fakes/telegram-server.js';
import { waitFor } from '../../helpers.js';
import { redisProblem, type SharedRedis, sharedRedis } from '../../redis-server.js';
import { bootChannelKernel, type ChannelKernel } from '../channel-harness.js';

const problem = redisProblem();
const server = sharedRedis();
let redis: SharedRedis;
let admin: Redis;
let tg: FakeTelegram | undefined;
const machines: ChannelKernel[] = [];

beforeAll(() => {
  if (problem) return;
  redis = server();
  admin = server().admin();
});
afterEach(async () => {
  for (const m of machines.splice(0)) await m.close().catch(() => {});
  await tg?.close();
  tg = undefined;
});

async function machine(prefix: string): Promise<ChannelKernel> {
  const m = await bootChannelKernel({
    channel: 'chatA',
    config: {
      chatAToken: tg!.token,
      chatAApiRoot: tg!.apiRoot,
      chatAPollTimeout: 1,
      chatAAutoReplyEnabled: true,
      queueRedisUrl: redis.url,
      queueRedisPrefix: prefix,
      queueWorkerLeaseSeconds: 2,
    },
    runAgent: false,
    closeFake: async () => {},
  });
  machines.push(m);
  return m;
}

const connected = (m: ChannelKernel) => m.channel().status().connected === true;

describe.skipIf(problem)('chatA on several machines (a Redis lease per bot token)', () => {
  it('only one machine polls; the other takes over when it stops; no 409 on the way', async () => {
    tg = await startFakeTelegram();
    const prefix = `lease1-${redis.prefix}`;
    const a = await machine(prefix);
    await waitFor(() => connected(a), 'a to connect');
    const b = await machine(prefix);
    await waitFor(() => /Another Keel process \(pid \d+ on .+\) is connected/.test(b.channel().status().lastError ?? ''), 'b to wait');
    tg.pushText('to whoever polls', { userId: 5 });
    await waitFor(() => a.actions().some((x) => x.task === 'to whoever polls'), 'a to take the message');
    await new Promise((r) => setTimeout(r, 1500));
    expect(connected(b)).toBe(false);
    expect(tg.conflicts).toBe(0);
    // a stops (its lease is released): b connects and receives what comes next
    await a.close();
    machines.splice(machines.indexOf(a), 1);
    await waitFor(() => connected(b), 'b to take over', 15_000);
    tg.pushText('after the handover', { userId: 5 });
    await waitFor(() => b.actions().some((x) => x.task === 'after the handover'), 'b to take the next message');
    expect(tg.conflicts).toBe(0);
  });

  it('a holder whose lease another process took gives the connection up before polling again', async () => {
    tg = await startFakeTelegram();
    const prefix = `lease2-${redis.prefix}`;
    const a = await machine(prefix);
    await waitFor(() => connected(a), 'a to connect');
    const key = new RedisLease({ url: redis.url, prefix, channel: 'chatA', credential: tg.token, leaseMs: 2000 }).key;
    expect(await admin.get(key)).toMatch(/"pid":/);
    // another process holds the lease now (a's lapsed while it was cut off, say)
    // (10 s: long enough that a, slowed by a loaded machine, still finds it there when it tries again)
    await admin.set(key, JSON.stringify({ host: 'elsewhere', pid: 4242 }), 'PX', 10_000);
    await waitFor(() => !connected(a), 'a to give the connection up', 8000);
    expect(
      a.logs
        .recent({ level: 'warn', limit: 50 })
        .map((e) => e.message)
        .join('\n'),
    ).toMatch(/giving the connection up: another process holds/);
    await waitFor(() => /pid 4242 on elsewhere/.test(a.channel().status().lastError ?? ''), 'a to name the holder');
    // once that lease runs out, a takes the connection back
    await waitFor(() => connected(a), 'a to connect again', 30_000);
    expect(tg.conflicts).toBe(0);
  });
});
