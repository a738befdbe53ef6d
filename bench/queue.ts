/**
 * Durable queue pushes (DESIGN.md section 7): acknowledged-durable pushes per second with group commit, and the
 * cost per push at 10 and at 100,000 already-queued actions, each beside the naive peer measured in the same
 * run: the whole queue rewritten as one JSON file (writeFileSync + fsync) on every push.
 *
 * Standalone: `npx tsx bench/queue.ts`.
 */
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import type { Action, Logger } from '../sdk/types.js';
import { createAction } from '../kernel/queue/action.js';
import { ActionQueue } from '../kernel/queue/queue.js';
import { encodeSnapshot } from '../kernel/queue/snapshot-file.js';
import { type BenchRow, median, printRows } from './lib.js';

const PRODUCERS = 64;
const SIZES = [10, 100_000] as const;
const quiet: Logger = { debug() {}, info() {}, warn() {}, error: (m) => console.error(m) };

function prefilled(size: number): Action[] {
  const now = Date.now();
  return Array.from({ length: size }, (_, i) =>
    createAction({ task: `queued task number ${i}: summarise the inbox and reply`, priority: (i % 10) + 1 }, now),
  );
}

/** A home whose actions.json already holds `size` pending actions. */
function homeWith(actions: Action[]): string {
  const home = mkdtempSync(join(tmpdir(), 'keel-bench-queue-'));
  writeFileSync(join(home, 'actions.json'), encodeSnapshot({ actions, completed: [], failed: [] }, 'none', 0));
  return home;
}

/** Keel: `pushes` durable pushes spread over PRODUCERS concurrent producers; returns pushes per second. */
async function keelRun(actions: Action[], pushes: number): Promise<number> {
  const home = homeWith(actions);
  const q = await ActionQueue.open({ home, owner: true, log: quiet });
  try {
    const burst = async (n: number) => {
      let left = n;
      await Promise.all(
        Array.from({ length: PRODUCERS }, async () => {
          while (left-- > 0) await q.push({ task: 'reply to the newest message', priority: 7 });
        }),
      );
    };
    await burst(2000); // warm-up: JIT, page cache, file extents
    const t = performance.now();
    await burst(pushes);
    return pushes / ((performance.now() - t) / 1000);
  } finally {
    await q.close();
    rmSync(home, { recursive: true, force: true });
  }
}

/** The peer: one push = the whole array rewritten and fsynced. Returns pushes per second. */
function naiveRun(actions: Action[], pushes: number): number {
  const home = mkdtempSync(join(tmpdir(), 'keel-bench-naive-'));
  const file = join(home, 'actions.json');
  const list = [...actions];
  const push = () => {
    list.push(createAction({ task: 'reply to the newest message', priority: 7 }, Date.now()));
    writeFileSync(file, JSON.stringify({ actions: list }));
    const fd = openSync(file, 'r+');
    fsyncSync(fd);
    closeSync(fd);
  };
  try {
    for (let i = 0; i < 3; i++) push();
    const t = performance.now();
    for (let i = 0; i < pushes; i++) push();
    return pushes / ((performance.now() - t) / 1000);
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

export async function benchQueue(): Promise<BenchRow[]> {
  const keel = new Map<number, number>();
  const naive = new Map<number, number>();
  for (const size of SIZES) {
    const actions = prefilled(size);
    const runs: number[] = [];
    for (let r = 0; r < 3; r++) runs.push(await keelRun(actions, 20_000));
    keel.set(size, median(runs));
    // The naive rewrite of 100,000 actions takes a good fraction of a second per push: a few dozen suffice.
    naive.set(size, naiveRun(actions, size >= 100_000 ? 24 : 400));
  }
  const peer = 'naive whole-file JSON rewrite (writeFileSync + fsync per push)';
  const us = (perSecond: number) => 1e6 / perSecond;
  const rows: BenchRow[] = [];
  for (const size of SIZES) {
    const n = size.toLocaleString('en-US');
    rows.push({
      name: `queue: durable pushes/s, group commit (${PRODUCERS} producers), ${n} queued`,
      value: keel.get(size)!,
      unit: 'pushes/s',
      peer,
      peerValue: naive.get(size)!,
      budget: '>= 8000 pushes/s',
      ok: keel.get(size)! >= 8000,
    });
  }
  for (const size of SIZES) {
    const n = size.toLocaleString('en-US');
    rows.push({
      name: `queue: cost per durable push, ${n} queued`,
      value: us(keel.get(size)!),
      unit: 'us/push',
      peer,
      peerValue: us(naive.get(size)!),
      budget: 'below peer',
      ok: us(keel.get(size)!) < us(naive.get(size)!),
    });
  }
  const flat = us(keel.get(100_000)!) / us(keel.get(10)!);
  rows.push({
    name: 'queue: cost flat 10 -> 100,000 queued (cost at 100,000 / cost at 10)',
    value: flat,
    unit: 'x',
    peer,
    peerValue: us(naive.get(100_000)!) / us(naive.get(10)!),
    budget: 'ratio <= 1.5',
    ok: flat <= 1.5,
  });
  return rows;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printRows(await benchQueue());
}
