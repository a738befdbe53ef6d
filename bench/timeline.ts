/**
 * What recording action timelines costs a push: `ctx.queue.push` in a kernel running the timeline plugin (its
 * actionQueued tap queues the write, committed in one transaction per event-loop turn) against the same push in a
 * kernel without it, interleaved so both see the same disk. Plus the store's own cost per new action and per
 * event, batched as the recorder commits them, against one transaction per write.
 */
import { performance } from 'node:perf_hooks';
import { TimelineStore } from '../plugins/timeline/src/store.js';
import { bootKernel, removeHome, tempHome } from '../testing/index.js';
import { median, printRows, type BenchRow } from './lib.js';

async function pushes(n: number): Promise<{ withTimeline: number; without: number }> {
  const a = await bootKernel({ builtins: ['timeline'] });
  const b = await bootKernel({});
  try {
    const sa: number[] = [];
    const sb: number[] = [];
    for (let i = 0; i < n; i++) {
      for (const [k, into] of [
        [a, sa],
        [b, sb],
      ] as const) {
        const t0 = performance.now();
        await k.kernel.queue.push({ task: `task ${i}`, source: 'cli' });
        // Let the recorder's write happen inside the measured span, as it would before the next push.
        await new Promise((r) => setImmediate(r));
        into.push((performance.now() - t0) * 1000);
      }
    }
    return { withTimeline: median(sa), without: median(sb) };
  } finally {
    await a.close();
    await b.close();
  }
}

function store(n: number, batch: number): { action: number; event: number } {
  const home = tempHome('keel-bench-timeline-');
  const s = TimelineStore.open(home);
  try {
    let t = performance.now();
    for (let i = 0; i < n; i += batch) {
      s.tx(() => {
        for (let j = i; j < i + batch; j++) {
          s.ensure({
            id: `act_${j}`,
            task: 'x',
            source: 'chat',
            status: 'pending',
            createdAt: new Date().toISOString(),
            inbound: { channel: 'chat', messageId: `m${j}`, userId: 'u' },
          });
        }
      });
    }
    const action = ((performance.now() - t) * 1000) / n;
    t = performance.now();
    for (let i = 0; i < n; i += batch) {
      s.tx(() => {
        for (let j = i; j < i + batch; j++) s.add(`act_${n - 1 - (j % 1000)}`, 'skill_call', { name: 'lookup', ok: true, durationMs: 1 });
      });
    }
    return { action, event: ((performance.now() - t) * 1000) / n };
  } finally {
    s.close();
    removeHome(home);
  }
}

export async function benchTimeline(n = 300): Promise<BenchRow[]> {
  const p = await pushes(n);
  const batched = store(4000, 50);
  const single = store(4000, 1);
  return [
    {
      name: 'push with the timeline plugin',
      value: p.withTimeline,
      unit: 'µs',
      peer: 'push without it',
      peerValue: p.without,
      budget: '<= 1.2x',
      ok: p.withTimeline <= p.without * 1.2,
    },
    {
      name: 'timeline: new action, batched',
      value: batched.action,
      unit: 'µs',
      peer: 'one transaction each',
      peerValue: single.action,
      budget: '<= 1x',
      ok: batched.action <= single.action,
    },
    {
      name: 'timeline: event, batched',
      value: batched.event,
      unit: 'µs',
      peer: 'one transaction each',
      peerValue: single.event,
      budget: '<= 1x',
      ok: batched.event <= single.event,
    },
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) printRows(await benchTimeline());
