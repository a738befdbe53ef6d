/**
 * The restart schedule of an MCP server that cannot be reached: a real child process that exits at once, timers on
 * an injected clock, so each wait is read off the schedule rather than slept.
 */
import { describe, expect, it } from 'vitest';
import { backoffDelay, type Clock, describe as line, ServerConnection } from '../../../plugins/mcp/src/client.js';
import { waitFor } from '../../helpers.js';

function fakeClock() {
  let now = 1_000_000;
  const timers: Array<{ fn: () => void; at: number }> = [];
  const clock: Clock = {
    now: () => now,
    setTimeout: (fn, ms) => {
      const t = { fn, at: now + ms };
      timers.push(t);
      return t;
    },
    clearTimeout: (t) => {
      const i = timers.indexOf(t as (typeof timers)[number]);
      if (i >= 0) timers.splice(i, 1);
    },
  };
  return {
    clock,
    pending: () => timers.map((t) => t.at - now),
    fire() {
      const t = timers.shift()!;
      now = t.at;
      t.fn();
    },
  };
}

describe('mcp client backoff', () => {
  it('doubles the wait up to the maximum', () => {
    const b = { delayMs: 1000, maxDelayMs: 5000, attempts: 10 };
    expect([1, 2, 3, 4, 5].map((n) => backoffDelay(b, n))).toEqual([1000, 2000, 4000, 5000, 5000]);
  });

  it('restarts a dying server after 1 s, 2 s, 4 s, then leaves it failed', async () => {
    const c = fakeClock();
    const conn = new ServerConnection({
      name: 'dies',
      config: { command: process.execPath, args: ['-e', 'process.stderr.write("no db\\n"); process.exit(2)'] },
      backoff: () => ({ delayMs: 1000, maxDelayMs: 60_000, attempts: 4 }),
      clock: c.clock,
      version: 'test',
      log: { info: () => undefined, warn: () => undefined },
      onTools: () => undefined,
    });
    conn.start();
    const waits: number[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      await waitFor(() => c.pending().length === 1, `restart ${attempt} scheduled`);
      const s = conn.status();
      expect(s).toMatchObject({ state: 'restarting', attempt, tools: 0 });
      expect(line(s, Date.parse(s.nextTryAt!) - 1500)).toMatch(new RegExp(`^dies restarting \\(attempt ${attempt}, next try in 2 s\\)`));
      waits.push(c.pending()[0]!);
      c.fire();
    }
    await waitFor(() => conn.status().state === 'failed', 'failed');
    expect(waits).toEqual([1000, 2000, 4000]);
    expect(conn.status()).toMatchObject({ state: 'failed', attempt: 4 });
    expect(conn.status().lastError).toBeTruthy();
    expect(c.pending()).toEqual([]);
    await conn.stop();
  });
});
