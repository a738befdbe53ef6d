/**
 * SIGSTOP in the middle of a multi-chunk reply on one machine (two `keel run`, one bot token, the queue and the
 * connection's lease in Redis): while it is stopped, its leases run out and the other machine takes the connection
 * and the action over and sends the rest of the reply. Woken (SIGCONT), the first machine still believes it holds
 * the connection; its next chunk is refused by the lease's fencing token (KEEL_E_LEASE_LOST) before it leaves, so
 * Telegram gets nothing more from it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTelegram } from '../../fakes/telegram-server.js';
import { waitFor } from '../../helpers.js';
import { sharedRedis, redisProblem } from '../../redis-server.js';
import { crashHome } from '../channel-harness.js';

const problem = redisProblem();
const redis = sharedRedis();
const cleanups: Array<() => Promise<void> | void> = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe.skipIf(problem)('chatA on two machines, the holder paused mid-reply', () => {
  it('woken after the other machine took over, the paused one sends nothing more: its next chunk is refused', async () => {
    const tg = await startFakeTelegram();
    cleanups.push(() => tg.close());
    const paragraphs = Array.from({ length: 30 }, (_, i) => `Part ${i}. ${'The quick brown fox jumps over the lazy dog. '.repeat(10)}`);
    const other = Array.from({ length: 30 }, (_, i) => `Other ${i}. ${'A different wording of the same report. '.repeat(10)}`);
    const shared = {
      chatAAutoReplyEnabled: true,
      chatAPollTimeout: 1,
      queueRedisUrl: redis().url,
      queueRedisPrefix: `pause-${redis().prefix}`,
      queueWorkerLeaseSeconds: 2,
    };
    const env = { CHATA_TOKEN: tg.token, CHATA_API_ROOT: tg.apiRoot };
    const a = crashHome({
      prefix: 'keel-chata-a-',
      replies: [{ text: paragraphs.join('\n\n') }],
      config: shared,
      env,
    });
    const b = crashHome({ prefix: 'keel-chata-b-', replies: [{ text: other.join('\n\n') }], config: shared, env });
    cleanups.push(
      () => a.close(),
      () => b.close(),
    );
    const first = a.start();
    let aLog = '';
    first.stderr!.on('data', (d) => (aLog += String(d)));
    cleanups.push(() => void first.kill('SIGCONT'));
    await waitFor(() => tg.callsOf('getUpdates').length > 0, 'a to poll', 20_000);
    b.start();
    tg.pushText('write the long report', { userId: 77 });
    // a is stopped while Telegram takes its second chunk: that one arrives (it was on the wire), a never hears back
    let stopped = false;
    tg.onCall = (c) => {
      if (!stopped && c.method === 'sendMessage' && tg.callsOf('sendMessage').length === 2) {
        stopped = true;
        first.kill('SIGSTOP');
      }
    };
    const texts = () => tg.sent.filter((m) => m.chat.id === 77).map((m) => m.text!);
    await waitFor(() => stopped, 'a to send its second chunk', 60_000);
    // b takes the connection and the action over, and sends the rest of a's reply (a's chunks, not its own)
    const last = paragraphs.at(-1)!.slice(0, 9);
    await waitFor(() => texts().join('\n\n').includes(last), 'b to finish the reply', 60_000);
    tg.onCall = undefined;
    const before = tg.callsOf('sendMessage').length;
    const joined = texts().join('\n\n');
    for (const p of paragraphs) expect(joined.includes(p.slice(0, 9)), p.slice(0, 8)).toBe(true);
    expect(joined).not.toContain('Other 0.');

    // a wakes, believing it still holds the connection: its next chunk is refused before it leaves
    first.kill('SIGCONT');
    await waitFor(
      () => /send refused: this process no longer holds the connection's lease/.test(aLog),
      'a to refuse its next chunk',
      30_000,
    );
    await new Promise((r) => setTimeout(r, 2500)); // anything a would still send
    expect(
      tg
        .callsOf('sendMessage')
        .slice(before)
        .map((c) => String(c.params.text).slice(0, 9)),
    ).toEqual([]);
    // It yields the connection: its lease watch says so, or (when its stall watchdog woke first) its next connect
    // finds the other machine holding the lease and waits.
    expect(aLog).toMatch(/giving the connection up|is connected with the same credentials; waiting for it to stop/);
  }, 180_000);
});
