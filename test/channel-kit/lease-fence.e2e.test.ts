/**
 * Fencing tokens on a channel's connection lease (sdk/channel-kit/lease.ts), against a real redis-server and the
 * loopback Bot API: every take of the lease gets a higher token; a holder paused past its lease (its renewals
 * stopped, its key run out) while another process took the lease has its sends refused (KEEL_E_LEASE_LOST), at the
 * shared ledger's claim and before each chunk, through the kit's real send path (Outbox → DeliveryLedger with its
 * Redis copy → rate limiter → chatA's sendChunk over grammY). Nothing of it reaches the platform, what it did not
 * send is left unmarked for the new holder, and the new holder's send goes through.
 */
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { classifyTelegram, makeApi, sendChunk, type TgChunk } from '../../plugins/chatA/src/telegram.js';
import {
  ChannelStore,
  DeliveryLedger,
  LeaseLostError,
  Outbox,
  RATE_POLICIES,
  RateLimiter,
  RedisLease,
  RedisSharedLedger,
} from '../../sdk/channel-kit/index.js';
import { removeHome, tempHome } from '../../testing/index.js';
import { startFakeTelegram, type FakeTelegram } from '../fakes/telegram-server.js';
import { waitFor } from '../helpers.js';
import { captureLog } from '../kernel/queue/helpers.js';
import { privateRedis, redisProblem, type SharedRedis, sharedRedis, type TestRedis } from '../redis-server.js';

const problem = redisProblem();
const server = sharedRedis();
let redis: SharedRedis | TestRedis;
let admin: Redis;
let tg: FakeTelegram | undefined;
let n = 0;
const cleanup: Array<() => Promise<void> | void> = [];

beforeAll(() => {
  if (problem) return;
  redis = server();
  admin = server().admin();
});

afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
  await tg?.close();
  tg = undefined;
});

const CREDENTIAL = 'bot-token-for-the-fence-test';

function lease(prefix: string, leaseMs: number): RedisLease {
  const l = new RedisLease({ url: redis.url, prefix, channel: 'chatA', credential: CREDENTIAL, leaseMs });
  cleanup.push(() => l.release());
  return l;
}

/** One machine's send path, as createChannelRuntime wires it for chatA, fenced by `fence`. */
function machine(prefix: string, fence: RedisLease, send: (c: TgChunk, i: number, chatId: string) => Promise<string>) {
  const home = tempHome('keel-fence-');
  const store = ChannelStore.open(home, 'chatA');
  const log = captureLog();
  const shared = new RedisSharedLedger({ url: redis.url, prefix, channel: 'chatA', log });
  const ledger = new DeliveryLedger(store, shared);
  const outbox = new Outbox({ ledger, limiter: new RateLimiter(RATE_POLICIES.telegram), classify: classifyTelegram, log, fence });
  cleanup.push(async () => {
    store.close();
    await shared.close();
    removeHome(home);
  });
  return { outbox, ledger, log, deliver: (key: string, texts: string[]) => outbox.deliver(key, '42', texts.map(chunk), send) };
}

const chunk = (text: string): TgChunk => ({ kind: 'text', plain: text });

/** Stops `l`'s renewals (as SIGSTOP or a blocked event loop would) and waits for its key to run out in Redis. */
async function pause(l: RedisLease): Promise<void> {
  clearInterval((l as unknown as { timer: NodeJS.Timeout }).timer);
  await waitFor(async () => (await admin.exists(l.key)) === 0, 'the paused holder’s lease to run out', 10_000);
}

describe.skipIf(problem)('fencing tokens on the connection lease', () => {
  it('every take of the lease gets a higher token; a reconnect while holding keeps it', async () => {
    const prefix = `fence${++n}-${server().prefix}`;
    const a = lease(prefix, 5000);
    const b = lease(prefix, 5000);
    expect((await a.acquire()).ok).toBe(true);
    const first = a.token!;
    expect(first).toBeGreaterThan(0);
    expect(JSON.parse((await admin.get(a.key))!)).toMatchObject({ pid: process.pid, fence: first });
    // the supervisor acquires again at each reconnect: same hold, same token
    expect((await a.acquire()).ok).toBe(true);
    expect(a.token).toBe(first);
    expect((await b.acquire()).ok).toBe(false);
    expect(b.token).toBeUndefined();
    await a.release();
    expect(a.token).toBeUndefined();
    expect((await b.acquire()).ok).toBe(true);
    expect(b.token).toBe(first + 1);
    await b.release();
    expect((await a.acquire()).ok).toBe(true);
    expect(a.token).toBe(first + 2);
    expect(await admin.get(a.fenceKey)).toBe(String(first + 2));
  });

  it('a paused holder’s reply is refused at the claim: nothing reaches the platform or the shared ledger, the new holder sends it', async () => {
    tg = await startFakeTelegram();
    const api = makeApi(tg.token, tg.apiRoot);
    const prefix = `fence${++n}-${server().prefix}`;
    const leaseA = lease(prefix, 400);
    const leaseB = lease(prefix, 5000);
    expect((await leaseA.acquire()).ok).toBe(true);
    const lost: string[] = [];
    leaseA.watch((why) => lost.push(why));
    const a = machine(prefix, leaseA, (c, _i, chat) => sendChunk(api, chat, c));
    const b = machine(prefix, leaseB, (c, _i, chat) => sendChunk(api, chat, c));

    await pause(leaseA);
    expect((await leaseB.acquire()).ok).toBe(true);
    expect(leaseB.token).toBe(leaseA.token! + 1);

    // a still believes it holds the lease (its renewal never ran): its send is refused all the same
    const refused = a.deliver('act_1:r0', ['from a, part one', 'from a, part two']);
    await expect(refused).rejects.toBeInstanceOf(LeaseLostError);
    await expect(refused).rejects.toMatchObject({ code: 'KEEL_E_LEASE_LOST' });
    expect(tg.callsOf('sendMessage')).toHaveLength(0);
    expect(await admin.exists(`${prefix}ledger:chatA:act_1:r0`)).toBe(0);
    expect(a.ledger.entries('act_1:r0')).toEqual([]);
    // a gives the connection up, and says why once
    expect(lost).toHaveLength(1);
    expect(leaseA.token).toBeUndefined();
    expect(a.log.text('warn').match(/send refused/g)).toHaveLength(1);

    // b, the new holder, sends the reply
    await b.deliver('act_1:r0', ['from b, part one', 'from b, part two']);
    expect(tg.sent.map((m) => m.text)).toEqual(['from b, part one', 'from b, part two']);
  });

  it('a holder paused in the middle of a reply: the next chunk is refused before it leaves, the new holder sends it, once', async () => {
    tg = await startFakeTelegram();
    const api = makeApi(tg.token, tg.apiRoot);
    const prefix = `fence${++n}-${server().prefix}`;
    const leaseA = lease(prefix, 400);
    const leaseB = lease(prefix, 5000);
    expect((await leaseA.acquire()).ok).toBe(true);
    const lost: string[] = [];
    leaseA.watch((why) => lost.push(why));
    // a's first chunk reaches Telegram; then a is paused past its lease, and b takes the connection meanwhile
    const a = machine(prefix, leaseA, async (c, i, chat) => {
      const id = await sendChunk(api, chat, c);
      if (i === 0) {
        await pause(leaseA);
        expect((await leaseB.acquire()).ok).toBe(true);
      }
      return id;
    });
    const b = machine(prefix, leaseB, (c, _i, chat) => sendChunk(api, chat, c));

    await expect(a.deliver('act_2:r0', ['part one', 'part two', 'part three'])).rejects.toMatchObject({
      code: 'KEEL_E_LEASE_LOST',
      message: expect.stringMatching(/another process \(pid \d+ on .+\) holds it now with token \d+/),
    });
    expect(tg.sent.map((m) => m.text)).toEqual(['part one']);
    expect(lost).toHaveLength(1);
    expect(a.ledger.entries('act_2:r0').map((e) => e.state)).toEqual(['sent', 'pending', 'pending']);
    await waitFor(async () => (await admin.hget(`${prefix}ledger:chatA:act_2:r0`, 'sent:0')) !== null, 'a’s mark of part one');

    // b comes to the same reply (it took the action over): what a stored, minus what a sent
    await b.deliver('act_2:r0', ['other wording']);
    expect(tg.sent.map((m) => m.text)).toEqual(['part one', 'part two', 'part three']);

    // a holder that never lost its lease sends as before
    await b.deliver('act_3:r0', ['still b']);
    expect(tg.sent.at(-1)?.text).toBe('still b');
  });

  // It stops Redis for a moment: a private redis-server, not the run's shared one.
  describe('with a private redis-server', () => {
    const own = privateRedis();
    let shared: SharedRedis | TestRedis;
    beforeAll(() => {
      shared = redis;
      redis = own();
    });
    afterAll(() => {
      redis = shared;
    });

    it('Redis unreachable: a chunk goes while the lease was renewed within two thirds of its length, is refused after', async () => {
      const prefix = `fence${++n}-${server().prefix}`;
      const l = lease(prefix, 3000);
      expect((await l.acquire()).ok).toBe(true);
      const lost: string[] = [];
      l.watch((why) => lost.push(why));
      const hold = l.hold()!;
      clearInterval((l as unknown as { timer: NodeJS.Timeout }).timer);
      await own().kill();
      try {
        // just renewed: the connection is kept by this rule, and so is the send
        await l.check(hold);
        // as if its event loop had been blocked for 2.1 s of its 3 s lease
        (l as unknown as { lastRenewed: number }).lastRenewed -= 2100;
        await expect(l.check(hold)).rejects.toMatchObject({
          code: 'KEEL_E_LEASE_LOST',
          message: expect.stringMatching(/cannot check the connection's lease, last renewed \d+ ms ago/),
        });
        expect(lost).toHaveLength(1);
        expect(l.hold()).toBeUndefined();
      } finally {
        await own().restart();
      }
    });
  });
});
