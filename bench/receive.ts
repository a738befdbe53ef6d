/**
 * Inbound channel message to durable action: sdk `receive` (admin check, session, messageIn, gating, duplicate
 * scan, push) against a bare `ctx.queue.push` of the same task, interleaved in one kernel so both see the same
 * disk and the same queue size (the fsync of the push dominates both). Medians per message, with and without
 * the duplicate check (seeded once from the queue, then in memory: it must not grow with the queue).
 */
import { performance } from 'node:perf_hooks';
import { receive, type PushInput } from '../sdk/index.js';
import { bootKernel, fakeChannel } from '../testing/index.js';
import { median, printRows, type BenchRow } from './lib.js';

export async function benchReceive(n = 600): Promise<BenchRow[]> {
  const chat = fakeChannel('bench', { autoReply: true });
  const t = await bootKernel({ plugins: [chat] });
  try {
    const ctx = chat.ctx!;
    const push = (i: number) => {
      const input: PushInput = {
        task: `message ${i}`,
        source: 'bench',
        actor: { kind: 'user', channel: 'bench', userId: `u${i % 100}`, untrusted: true },
        metadata: { replyTo: { chatId: `c${i % 100}`, messageId: `p${i}` } },
      };
      return ctx.queue.push(input);
    };
    const recv = (i: number, scan: boolean) =>
      receive(
        ctx,
        { channel: 'bench', messageId: `${scan}-${i}`, chatId: `c${i % 100}`, userId: `u${i % 100}`, text: `message ${i}` },
        { autoReply: true, checkDuplicates: scan },
      );
    const samples = { push: [] as number[], scan: [] as number[], noScan: [] as number[] };
    const time = async (into: number[], fn: () => Promise<unknown>) => {
      const t0 = performance.now();
      await fn();
      into.push((performance.now() - t0) * 1000);
    };
    for (let i = 0; i < n; i++) {
      await time(samples.push, () => push(i));
      await time(samples.scan, () => recv(i, true));
      await time(samples.noScan, () => recv(i, false));
    }
    const p = median(samples.push);
    const s = median(samples.scan);
    const ns = median(samples.noScan);
    const size = ctx.queue.counts().pending;
    return [
      {
        name: `receive per message (queue up to ${size} pending)`,
        value: s,
        unit: 'µs',
        peer: 'ctx.queue.push',
        peerValue: p,
        budget: '<= 1.2x push',
        ok: s <= p * 1.2,
      },
      {
        name: 'receive without the duplicate check',
        value: ns,
        unit: 'µs',
        peer: 'ctx.queue.push',
        peerValue: p,
        budget: '<= 1.2x push',
        ok: ns <= p * 1.2,
      },
    ];
  } finally {
    await t.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) printRows(await benchReceive());
