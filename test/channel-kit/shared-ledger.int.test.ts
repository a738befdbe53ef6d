/**
 * The delivery ledger's shared copy in Redis (several machines, one queue), against a real redis-server: a reply
 * first stored on one machine is what another machine sends under the same key, minus the chunks marked sent; with
 * queueRedisSigningKey, a reply or a mark written by something without the key is not believed.
 */
import type { Redis } from 'ioredis';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisSharedLedger } from '../../sdk/channel-kit/shared-ledger.js';
import { captureLog } from '../kernel/queue/helpers.js';
import { waitFor } from '../helpers.js';
import { sharedRedis, redisProblem, type SharedRedis } from '../redis-server.js';

const problem = redisProblem();
const server = sharedRedis();
let redis: SharedRedis;
let admin: Redis;
let n = 0;
const open: RedisSharedLedger[] = [];

beforeAll(() => {
  if (problem) return;
  redis = server();
  admin = server().admin();
});

afterEach(async () => {
  for (const l of open.splice(0)) await l.close();
});

const KEY = 'a-shared-signing-key-for-the-ledger-test';

function machine(prefix: string, signingKey?: string) {
  const log = captureLog();
  const ledger = new RedisSharedLedger({ url: redis.url, prefix, channel: 'chatA', log, ...(signingKey ? { signingKey } : {}) });
  open.push(ledger);
  return { ledger, log };
}

describe.skipIf(problem)('shared delivery ledger', () => {
  it('a reply stored by one machine is what the next sends, minus its confirmed chunks (signed and unsigned)', async () => {
    for (const signingKey of [undefined, KEY]) {
      const prefix = `sl${++n}-${redis.prefix}`;
      const a = machine(prefix, signingKey);
      const b = machine(prefix, signingKey);
      const first = await a.ledger.claim('act_1:r0', '42', [{ text: 'part one' }, { text: 'part two' }]);
      expect(first.sent.size).toBe(0);
      a.ledger.mark('act_1:r0', 0, 'm-100');
      await waitFor(async () => (await admin.hget(`${prefix}ledger:chatA:act_1:r0`, 'sent:0')) !== null, 'the mark to reach Redis');
      // b's model worded it differently; what a stored is sent, and part one not again
      const second = await b.ledger.claim('act_1:r0', '42', [{ text: 'other wording' }]);
      expect(second).toEqual({ chatId: '42', chunks: [{ text: 'part one' }, { text: 'part two' }], sent: new Map([[0, 'm-100']]) });
      expect(b.log.text('error')).toBe('');
    }
  });

  it('signed: a reply or a mark planted by something without the key is not believed', async () => {
    const prefix = `sl${++n}-${redis.prefix}`;
    const a = machine(prefix, KEY);
    const b = machine(prefix, KEY);
    // Planted ahead of a reply the attacker saw queued: the bot must not send these words.
    await admin.hset(
      `${prefix}ledger:chatA:act_2:r0`,
      'chat',
      '42',
      'chunks',
      JSON.stringify([{ text: 'send your password to evil.example' }]),
    );
    const got = await b.ledger.claim('act_2:r0', '42', [{ text: 'the real answer' }]);
    expect(got).toEqual({ chatId: '42', chunks: [{ text: 'the real answer' }], sent: new Map() });
    expect(b.log.text('error')).toMatch(
      /has no valid signature \(queueRedisSigningKey\); it is ignored and this machine's own reply is sent/,
    );
    // A genuine signature copied onto other words does not verify either.
    await a.ledger.claim('act_3:r0', '42', [{ text: 'genuine' }]);
    const sig = await admin.hget(`${prefix}ledger:chatA:act_3:r0`, 'sig');
    expect(sig).toMatch(/^[A-Za-z0-9_-]{43}$/);
    await admin.hset(`${prefix}ledger:chatA:act_4:r0`, 'chat', '42', 'chunks', JSON.stringify([{ text: 'forged' }]), 'sig', sig!);
    expect((await b.ledger.claim('act_4:r0', '42', [{ text: 'mine' }])).chunks).toEqual([{ text: 'mine' }]);
    // A forged mark would keep a chunk from being sent: it counts as unsent (a possible repeat, never a loss).
    a.ledger.mark('act_3:r0', 0, 'm-1');
    await waitFor(async () => (await admin.hget(`${prefix}ledger:chatA:act_3:r0`, 'sent:0')) !== null, 'the genuine mark');
    await admin.hset(`${prefix}ledger:chatA:act_3:r0`, 'sent:1', 'm-2 not-a-signature', 'sent:2', 'm-3');
    expect((await b.ledger.claim('act_3:r0', '42', [{ text: 'x' }])).sent).toEqual(new Map([[0, 'm-1']]));
  });
});
