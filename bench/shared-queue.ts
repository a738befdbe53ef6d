/**
 * The shared queue in Redis (queueRedisUrl, docs/scaling.md) beside BullMQ on the same private redis-server
 * (appendonly yes, appendfsync always: every acknowledged write is on disk on both sides):
 * - acknowledged pushes per second from 64 concurrent producers: `ActionQueue.push` against BullMQ `Queue.add`;
 * - actions carried through per second by two runners in one process each taking, running (no work) and settling
 *   them: `take` + `complete` against two BullMQ `Worker`s (concurrency 1 each, as Keel's main lane) with an empty
 *   processor;
 * - `keel push` to the shared queue from a new process, beside the same to the file queue.
 * Reported, not budgets: DESIGN's queue budget is the file queue's.
 *
 * Standalone: `npx tsx bench/shared-queue.ts`. Needs redis-server (`apt-get install -y redis-server`).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { Queue, Worker } from 'bullmq';
import { ActionQueue } from '../kernel/queue/queue.js';
import { RedisStore } from '../kernel/queue/redis-store.js';
import type { Logger } from '../sdk/types.js';
import { redisProblem, startRedis, type TestRedis } from '../test/redis-server.js';
import { type BenchRow, median, printRows } from './lib.js';

const PRODUCERS = 64;
const PUSHES = 10_000;
const CARRIED = 3000;
const quiet: Logger = { debug() {}, info() {}, warn() {}, error: (m) => console.error(m) };
const CLI = join(import.meta.dirname, '..', 'dist', 'cli.js');
let round = 0;

async function keelQueue(redis: TestRedis, prefix: string, owner: boolean): Promise<ActionQueue> {
  const home = mkdtempSync(join(tmpdir(), 'keel-bench-shared-'));
  const store = new RedisStore({ url: redis.url, prefix, owner, log: quiet });
  return ActionQueue.open({ home, owner, log: quiet, store, quietCompactMs: 0 });
}

async function producers(n: number, push: () => Promise<unknown>): Promise<number> {
  let left = n;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: PRODUCERS }, async () => {
      while (left-- > 0) await push();
    }),
  );
  return n / ((performance.now() - t) / 1000);
}

async function keelPushes(redis: TestRedis): Promise<number> {
  const q = await keelQueue(redis, `bp${++round}:`, false);
  try {
    await producers(1000, () => q.push({ task: 'reply to the newest message', priority: 7 }));
    return await producers(PUSHES, () => q.push({ task: 'reply to the newest message', priority: 7 }));
  } finally {
    await q.close();
  }
}

async function bullPushes(redis: TestRedis): Promise<number> {
  const q = new Queue(`bp${++round}`, { connection: { host: '127.0.0.1', port: redis.port } });
  try {
    await producers(1000, () => q.add('task', { task: 'reply to the newest message' }, { priority: 7 }));
    return await producers(PUSHES, () => q.add('task', { task: 'reply to the newest message' }, { priority: 7 }));
  } finally {
    await q.close();
  }
}

async function keelCarried(redis: TestRedis): Promise<number> {
  const prefix = `bc${++round}:`;
  const feeder = await keelQueue(redis, prefix, false);
  const runners = [await keelQueue(redis, prefix, true), await keelQueue(redis, prefix, true)];
  try {
    await producers(CARRIED, () => feeder.push({ task: 'nothing to do' }));
    await Promise.all(runners.map((r) => waitUntil(() => r.counts().pending === CARRIED)));
    const t = performance.now();
    await Promise.all(
      runners.map(async (r) => {
        for (let a = await r.take(); a; a = await r.take()) await r.complete(a.id, 'done');
      }),
    );
    return CARRIED / ((performance.now() - t) / 1000);
  } finally {
    for (const q of [feeder, ...runners]) await q.close();
  }
}

async function bullCarried(redis: TestRedis): Promise<number> {
  const name = `bc${++round}`;
  const connection = { host: '127.0.0.1', port: redis.port };
  const q = new Queue(name, { connection });
  await producers(CARRIED, () => q.add('task', { task: 'nothing to do' }));
  let done = 0;
  let finish!: () => void;
  const all = new Promise<void>((r) => (finish = r));
  const t = performance.now();
  const workers = [0, 1].map(
    () =>
      new Worker(
        name,
        async () => {
          if (++done === CARRIED) finish();
          return 'done';
        },
        { connection, concurrency: 1 },
      ),
  );
  await all;
  const rate = CARRIED / ((performance.now() - t) / 1000);
  await Promise.all(workers.map((w) => w.close()));
  await q.close();
  return rate;
}

async function waitUntil(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 10));
}

/** `keel push` in a new process, median of 7, with `env` (the shared queue or none). */
function cliPush(home: string, env: Record<string, string>): number {
  const times: number[] = [];
  for (let i = 0; i < 8; i++) {
    const t = performance.now();
    execFileSync(process.execPath, [CLI, 'push', `bench ${i}`], { env: { ...process.env, KEEL_HOME: home, ...env }, stdio: 'ignore' });
    if (i > 0) times.push(performance.now() - t);
  }
  return median(times);
}

export async function benchSharedQueue(): Promise<BenchRow[]> {
  const problem = redisProblem();
  if (problem) {
    console.log(`(shared queue bench skipped: ${problem})`);
    return [];
  }
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-redis-'));
  const redis = await startRedis(dir);
  try {
    const kp: number[] = [];
    const bp: number[] = [];
    const kc: number[] = [];
    const bc: number[] = [];
    for (let r = 0; r < 3; r++) {
      kp.push(await keelPushes(redis));
      bp.push(await bullPushes(redis));
      kc.push(await keelCarried(redis));
      bc.push(await bullCarried(redis));
    }
    const fileHome = mkdtempSync(join(tmpdir(), 'keel-bench-push-'));
    const sharedHome = mkdtempSync(join(tmpdir(), 'keel-bench-push-'));
    writeFileSync(join(sharedHome, 'keel.config.yaml'), `queueRedisUrl: ${redis.url}\nqueueRedisPrefix: "cli:"\n`);
    const filePush = cliPush(fileHome, {});
    const sharedPush = cliPush(sharedHome, {});
    rmSync(fileHome, { recursive: true, force: true });
    rmSync(sharedHome, { recursive: true, force: true });
    const bull = 'BullMQ on the same Redis';
    return [
      {
        name: `shared queue: acknowledged pushes/s (${PRODUCERS} producers, appendfsync always), median of 3`,
        value: median(kp),
        unit: 'pushes/s',
        peer: `${bull}: Queue.add`,
        peerValue: median(bp),
        budget: 'report',
        ok: true,
      },
      {
        name: `shared queue: actions taken and settled per second by two runners (no work), median of 3`,
        value: median(kc),
        unit: 'actions/s',
        peer: `${bull}: two Workers, concurrency 1, empty processor`,
        peerValue: median(bc),
        budget: 'report',
        ok: true,
      },
      {
        name: 'shared queue: `keel push` in a new process to the shared queue',
        value: sharedPush,
        unit: 'ms',
        peer: '`keel push` to the file queue',
        peerValue: filePush,
        budget: 'report',
        ok: true,
      },
    ];
  } finally {
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) printRows(await benchSharedQueue());
