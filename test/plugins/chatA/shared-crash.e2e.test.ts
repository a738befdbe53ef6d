/**
 * kill -9 in the middle of a multi-chunk reply on one machine, with the queue shared through Redis and the same bot
 * configured on a second machine (its own KEEL_HOME): the second takes over the connection and the action, and
 * sends what the first had not confirmed, from the first one's chunks; nothing twice, nothing missing. Its own model
 * would have worded the reply differently: none of that is sent.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTelegram } from '../../fakes/telegram-server.js';
import { waitFor } from '../../helpers.js';
import { redisProblem, sharedRedis } from '../../redis-server.js';
import { crashHome } from '../channel-harness.js';
import { expectReplyOnce, killAtThirdChunk } from './harness.js';

const problem = redisProblem();
const redis = sharedRedis();
const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe.skipIf(problem)('chatA on two machines, kill -9 mid-reply', () => {
  it('the machine that takes over sends the rest of the first reply once, not a reply of its own', async () => {
    const tg = await startFakeTelegram();
    cleanups.push(() => tg.close());
    const paragraphs = Array.from({ length: 30 }, (_, i) => `Part ${i}. ${'The quick brown fox jumps over the lazy dog. '.repeat(10)}`);
    const other = Array.from({ length: 30 }, (_, i) => `Other ${i}. ${'A different wording of the same report. '.repeat(10)}`);
    const shared = {
      chatAAutoReplyEnabled: true,
      chatAPollTimeout: 1,
      queueRedisUrl: redis().url,
      queueRedisPrefix: `crash-${redis().prefix}`,
      queueWorkerLeaseSeconds: 2,
    };
    const env = { CHATA_TOKEN: tg.token, CHATA_API_ROOT: tg.apiRoot };
    const a = crashHome({ prefix: 'keel-chata-a-', replies: [{ text: paragraphs.join('\n\n') }], config: shared, env });
    const b = crashHome({ prefix: 'keel-chata-b-', replies: [{ text: other.join('\n\n') }], config: shared, env });
    cleanups.push(
      () => a.close(),
      () => b.close(),
    );
    const first = a.start();
    await waitFor(() => tg.callsOf('getUpdates').length > 0, 'a to poll', 20_000);
    b.start();
    tg.pushText('write the long report', { userId: 77 });
    // The first machine dies while its third chunk's request is in flight.
    await killAtThirdChunk(tg, first, 77);
    const joined = await expectReplyOnce(tg, 77, paragraphs);
    expect(joined).not.toContain('Other 0.');
    expect(tg.conflicts).toBe(0);
  }, 120_000);
});
