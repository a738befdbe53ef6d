/**
 * Redis down while a channel starts: the lease (and the shared ledger) fail their call and leave no client behind
 * dialling Redis on its own (ioredis reconnects a client whose first connection failed, for good, unless it is
 * disconnected), so a channel retrying every few seconds does not pile up connections for when Redis returns.
 */
import { createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { RedisLease } from '../../sdk/channel-kit/lease.js';
import { RedisSharedLedger } from '../../sdk/channel-kit/shared-ledger.js';

/** A port that accepts TCP and closes it at once (Redis going down), counting the dials. */
async function refusingRedis(): Promise<{ url: string; dials: () => number; close(): Promise<void> }> {
  let dials = 0;
  const sockets: Socket[] = [];
  const server = createServer((s) => {
    dials++;
    sockets.push(s);
    s.on('error', () => undefined);
    s.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `redis://127.0.0.1:${(server.address() as { port: number }).port}`,
    dials: () => dials,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

const log = { debug() {}, info() {}, warn() {}, error() {} };

describe('Redis down at a channel start', () => {
  it('a failed lease or ledger call leaves no client dialling Redis afterwards', async () => {
    const redis = await refusingRedis();
    try {
      const lease = new RedisLease({ url: redis.url, prefix: 'keel:', channel: 'chatA', credential: 'token', leaseMs: 15_000 });
      const got = await lease.acquire();
      expect(got.ok).toBe(false);
      const ledger = new RedisSharedLedger({ url: redis.url, prefix: 'keel:', channel: 'chatA', log });
      await expect(ledger.claim('k1', 'chat', [{ text: 'hi' }])).rejects.toThrow();
      const after = redis.dials();
      expect(after).toBeGreaterThan(0);
      // ioredis would dial again within 50–2000 ms for as long as the client lives.
      await new Promise((r) => setTimeout(r, 2500));
      expect(redis.dials()).toBe(after);
      await lease.release();
    } finally {
      await redis.close();
    }
  }, 30_000);
});
