/**
 * A Discord gateway that accepts the TCP connection and never answers the WebSocket upgrade (an outage): when the
 * kit's watchdog gives up on the connection while discord.js is still connecting, the socket's own error ("closed
 * before the connection was established") must go nowhere instead of ending the process as an uncaught 'error'.
 */
import { createServer as createHttp } from 'node:http';
import { createServer as createTcp, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { gatewayConnector } from '../../../plugins/chatC/src/gateway.js';

describe('chatC connection torn down while the gateway is still connecting', () => {
  it('ends the connection attempt with the abort reason and nothing escapes as an uncaught error', async () => {
    const held: Socket[] = [];
    const hole = createTcp((s) => {
      held.push(s);
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => hole.listen(0, '127.0.0.1', r));
    const holePort = (hole.address() as { port: number }).port;
    const upgrades: string[] = [];
    const rest = createHttp((req, res) => {
      upgrades.push(req.url ?? '');
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          url: `ws://127.0.0.1:${holePort}`,
          shards: 1,
          session_start_limit: { total: 1000, remaining: 1000, reset_after: 0, max_concurrency: 1 },
        }),
      );
    });
    await new Promise<void>((r) => rest.listen(0, '127.0.0.1', r));
    const uncaught: unknown[] = [];
    const onUncaught = (e: unknown) => uncaught.push(e);
    process.prependListener('uncaughtException', onUncaught);
    const noop = () => undefined;
    try {
      const connect = gatewayConnector({
        token: 'MTIz.abc.def',
        apiUrl: `http://127.0.0.1:${(rest.address() as { port: number }).port}/api`,
        log: { debug: noop, info: noop, warn: noop, error: noop },
        info: {},
        on: { ready: noop, message: noop, edit: noop, deleted: noop, interaction: noop, guilds: noop },
      } as unknown as Parameters<typeof gatewayConnector>[0]);
      const ac = new AbortController();
      const attempt = connect(ac.signal, { live: noop, connected: noop } as never);
      // The gateway URL was asked for and the socket is dialling the hole.
      await expect.poll(() => held.length, { timeout: 15_000 }).toBeGreaterThan(0);
      ac.abort(new Error('no sign of life'));
      await expect(attempt).rejects.toThrow('no sign of life');
      // Give a late 'error' of the torn-down socket its turn.
      await new Promise((r) => setTimeout(r, 500));
      expect(uncaught).toEqual([]);
      expect(upgrades.some((u) => u.includes('/gateway/bot'))).toBe(true);
    } finally {
      process.removeListener('uncaughtException', onUncaught);
      for (const s of held) s.destroy();
      await new Promise((r) => hole.close(r));
      await new Promise((r) => rest.close(r));
    }
  }, 60_000);
});
