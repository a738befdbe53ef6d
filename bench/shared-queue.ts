/**
 * The shared queue in Redis (queueRedisUrl, docs/scaling.md) beside BullMQ on the same private redis-server
 * (appendonly yes, appendfsync always: every acknowledged write is on disk on both sides):
 * - acknowledged pushes per second from 64 concurrent producers: Keel's `push` against BullMQ `Queue.add`;
 * - take+settle: actions taken and completed per second (no work) by 1, 2 and 4 runners, each runner a separate
 *   process, against the same number of processes each running a raw BullMQ `Worker` (concurrency 1 as Keel's main
 *   lane, an empty processor) on the same Redis in the same run, carrying the same jobs (`bullAdd`: the action as
 *   data, its priority, history bounded as Keel bounds it). Budgets
 *   (issue 37): Keel's overhead on top of BullMQ at most 1.3x (Keel's rate >= BullMQ's / 1.3), and 4 runners carry
 *   at least as much as 1;
 * - joining: a real `keel run` process on the shared queue after a backlog of 100,000 actions against one on an empty
 *   queue: the time from its start until it says it is ready, and its resident memory then. Budget: at most 2x each;
 * - `keel push` to the shared queue from a new process, beside the same to the file queue (reported).
 *
 * Keel's side is opened in one place, `openKeelQueue`: switching the queue engine is a change of that one line.
 *
 * Standalone: `npx tsx bench/shared-queue.ts`. Needs redis-server (`apt-get install -y redis-server`).
 */
import { type ChildProcess, execFileSync, fork, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { Queue, Worker } from 'bullmq';
import { createAction, DEFAULT_PRIORITY } from '../kernel/queue/action.js';
import { BullQueue } from '../kernel/queue/bull-queue.js';
import type { QueueEngine } from '../kernel/queue/engine.js';
import type { Logger } from '../sdk/types.js';
import { redisProblem, startRedis, type TestRedis } from '../test/redis-server.js';
import { type BenchRow, median, printRows } from './lib.js';

const PRODUCERS = 64;
const PUSHES = 10_000;
/** Actions per take+settle measurement (each runner count, each side). */
const CARRIED = 3000;
const RUNNER_COUNTS = [1, 2, 4] as const;
const BACKLOG = 100_000;
const quiet: Logger = { debug() {}, info() {}, warn() {}, error: (m) => console.error(m) };
const CLI = join(import.meta.dirname, '..', 'dist', 'cli.js');
let round = 0;

/** What the bench uses of a Keel queue engine (ActionQueue's methods; the BullMQ engine has the same). */
type KeelQueue = Pick<QueueEngine, 'push' | 'take' | 'complete' | 'counts' | 'close'>;

/** Keel's shared queue on `url` under `prefix`: the one line to change to measure another queue engine. */
async function openKeelQueue(url: string, prefix: string, owner: boolean): Promise<KeelQueue> {
  return BullQueue.open({ url, prefix, owner, log: quiet });
}

async function producers(n: number, push: () => Promise<unknown>, concurrency = PRODUCERS): Promise<number> {
  let left = n;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (left-- > 0) await push();
    }),
  );
  return n / ((performance.now() - t) / 1000);
}

async function keelPushes(redis: TestRedis): Promise<number> {
  const q = await openKeelQueue(redis.url, `bp${++round}:`, false);
  try {
    await producers(1000, () => q.push({ task: 'reply to the newest message' }));
    return await producers(PUSHES, () => q.push({ task: 'reply to the newest message' }));
  } finally {
    await q.close();
  }
}

/**
 * A job for the raw BullMQ side, the same job Keel's engine writes: the action as its data (Keel's job data is the
 * action), the action's id as the job id, its priority, one attempt, and history bounded at 100 completed and 100
 * failed (Keel's defaults). What is measured is then Keel's code on top of BullMQ, not BullMQ options Keel needs.
 */
function bullAdd(q: Queue, task: string): Promise<unknown> {
  const action = createAction({ task, priority: DEFAULT_PRIORITY }, Date.now());
  return q.add(
    'action',
    { action },
    {
      jobId: action.id,
      priority: 11 - action.priority,
      attempts: 1,
      removeOnComplete: { count: 100 },
      removeOnFail: { count: 100 },
    },
  );
}

async function bullPushes(redis: TestRedis): Promise<number> {
  const q = new Queue(`bp${++round}`, { connection: { host: '127.0.0.1', port: redis.port } });
  try {
    await producers(1000, () => bullAdd(q, 'reply to the newest message'));
    return await producers(PUSHES, () => bullAdd(q, 'reply to the newest message'));
  } finally {
    await q.close();
  }
}

// ---------------------------------------------------------------- take+settle, one process per runner

/** What the parent tells a runner process. */
interface RunnerJob {
  side: 'keel' | 'bull';
  url: string;
  port: number;
  /** Keel's prefix, or BullMQ's queue name. */
  name: string;
  /** How many actions wait before the start (a Keel runner is ready once it sees them all). */
  expect: number;
}

/** A runner process: opens its side, says `ready`, and on `go` takes and settles until nothing is left. */
async function runnerProcess(job: RunnerJob): Promise<void> {
  const send = (m: unknown) => process.send?.(m);
  const go = new Promise<void>((r) => process.once('message', () => r()));
  let done = 0;
  if (job.side === 'keel') {
    const q = await openKeelQueue(job.url, job.name, true);
    while (q.counts().pending < job.expect) await new Promise((r) => setTimeout(r, 5));
    send({ ready: true });
    await go;
    for (let a = await q.take(); a; a = await q.take()) {
      await q.complete(a.id, 'done');
      done++;
    }
    send({ done });
    await q.close();
  } else {
    const worker = new Worker(
      job.name,
      async () => {
        done++;
        return 'done';
      },
      { connection: { host: '127.0.0.1', port: job.port }, autorun: false, concurrency: 1 },
    );
    await worker.waitUntilReady();
    send({ ready: true });
    await go;
    const drained = new Promise<void>((r) => worker.once('drained', () => r()));
    void worker.run();
    await drained;
    send({ done });
    await worker.close();
  }
  process.exit(0);
}

/** Starts `n` runner processes on a queue holding `CARRIED` actions; actions/s from `go` until all are done. */
async function carried(job: Omit<RunnerJob, 'expect'>, n: number): Promise<number> {
  const children: ChildProcess[] = [];
  try {
    const ready: Array<Promise<void>> = [];
    const done: Array<Promise<number>> = [];
    for (let i = 0; i < n; i++) {
      const c = fork(import.meta.filename, ['--runner', JSON.stringify({ ...job, expect: CARRIED })], {
        execArgv: ['--import', import.meta.resolve('tsx')],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      children.push(c);
      const exited = new Promise<never>((_, rej) => c.once('exit', (code) => rej(new Error(`a ${job.side} runner exited (${code})`))));
      ready.push(Promise.race([new Promise<void>((r) => c.once('message', () => r())), exited]));
      done.push(
        Promise.race([new Promise<number>((r) => c.on('message', (m: { done?: number }) => m.done !== undefined && r(m.done))), exited]),
      );
    }
    await Promise.all(ready);
    const t = performance.now();
    for (const c of children) c.send('go');
    const counts = await Promise.all(done);
    const seconds = (performance.now() - t) / 1000;
    const total = counts.reduce((a, b) => a + b, 0);
    if (total !== CARRIED) throw new Error(`${job.side}: ${n} runners settled ${total} of ${CARRIED} actions`);
    return total / seconds;
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  }
}

async function keelCarried(redis: TestRedis, n: number): Promise<number> {
  const prefix = `bc${++round}:`;
  const feeder = await openKeelQueue(redis.url, prefix, false);
  try {
    await producers(CARRIED, () => feeder.push({ task: 'nothing to do' }));
  } finally {
    await feeder.close();
  }
  return carried({ side: 'keel', url: redis.url, port: redis.port, name: prefix }, n);
}

async function bullCarried(redis: TestRedis, n: number): Promise<number> {
  const name = `bc${++round}`;
  const q = new Queue(name, { connection: { host: '127.0.0.1', port: redis.port } });
  try {
    await producers(CARRIED, () => bullAdd(q, 'nothing to do'));
    return await carried({ side: 'bull', url: redis.url, port: redis.port, name }, n);
  } finally {
    await q.close();
  }
}

// ---------------------------------------------------------------- joining after a backlog

/** A `keel run` on the shared queue under `prefix`: ms from its start until its pid file says ready, and its RSS (MiB). */
async function joinOnce(redis: TestRedis, prefix: string): Promise<{ ms: number; rssMiB: number }> {
  const home = mkdtempSync(join(tmpdir(), 'keel-bench-join-'));
  // No agent: the runner joins the queue and takes nothing, so the backlog stays as it is.
  writeFileSync(join(home, 'keel.config.yaml'), `queueRedisUrl: ${redis.url}\nqueueRedisPrefix: "${prefix}"\npluginDenyList:\n  - agent\n`);
  const t = performance.now();
  const child = spawn(process.execPath, [CLI, 'run'], { env: { ...process.env, KEEL_HOME: home }, stdio: 'ignore' });
  try {
    const pidFile = join(home, 'run', 'agent.pid');
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`keel run exited (${child.exitCode}) before it was ready`);
      if (Date.now() > deadline) throw new Error('keel run was not ready within 120 s');
      if (existsSync(pidFile)) {
        try {
          if ((JSON.parse(readFileSync(pidFile, 'utf8')) as { ready?: boolean }).ready) break;
        } catch {
          // written as we read
        }
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    const ms = performance.now() - t;
    const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
    return { ms, rssMiB: kb / 1024 };
  } finally {
    child.kill('SIGKILL');
    await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(undefined) : child.once('exit', r)));
    rmSync(home, { recursive: true, force: true });
  }
}

async function joining(redis: TestRedis): Promise<{ empty: { ms: number; rssMiB: number }; backlog: { ms: number; rssMiB: number } }> {
  const emptyPrefix = `je${++round}:`;
  const backlogPrefix = `jb${++round}:`;
  const feeder = await openKeelQueue(redis.url, backlogPrefix, false);
  try {
    await producers(BACKLOG, () => feeder.push({ task: 'waiting in the backlog' }), 256);
  } finally {
    await feeder.close();
  }
  const empties: Array<{ ms: number; rssMiB: number }> = [];
  const backlogs: Array<{ ms: number; rssMiB: number }> = [];
  for (let i = 0; i < 3; i++) {
    empties.push(await joinOnce(redis, emptyPrefix));
    backlogs.push(await joinOnce(redis, backlogPrefix));
  }
  const med = (xs: Array<{ ms: number; rssMiB: number }>) => ({ ms: median(xs.map((x) => x.ms)), rssMiB: median(xs.map((x) => x.rssMiB)) });
  return { empty: med(empties), backlog: med(backlogs) };
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
    for (let r = 0; r < 3; r++) {
      kp.push(await keelPushes(redis));
      bp.push(await bullPushes(redis));
    }
    // Rounds of every runner count on both sides, alternating, so that a slow minute on a shared machine falls on
    // both; the median of the rounds per count and side.
    const keelRates = new Map<number, number[]>(RUNNER_COUNTS.map((n) => [n, []]));
    const bullRates = new Map<number, number[]>(RUNNER_COUNTS.map((n) => [n, []]));
    for (let r = 0; r < 3; r++)
      for (const n of RUNNER_COUNTS) {
        keelRates.get(n)!.push(await keelCarried(redis, n));
        bullRates.get(n)!.push(await bullCarried(redis, n));
      }
    const keelRate = new Map(RUNNER_COUNTS.map((n) => [n, median(keelRates.get(n)!)]));
    const bullRate = new Map(RUNNER_COUNTS.map((n) => [n, median(bullRates.get(n)!)]));
    const joined = await joining(redis);
    const fileHome = mkdtempSync(join(tmpdir(), 'keel-bench-push-'));
    const sharedHome = mkdtempSync(join(tmpdir(), 'keel-bench-push-'));
    writeFileSync(join(sharedHome, 'keel.config.yaml'), `queueRedisUrl: ${redis.url}\nqueueRedisPrefix: "cli:"\n`);
    const filePush = cliPush(fileHome, {});
    const sharedPush = cliPush(sharedHome, {});
    rmSync(fileHome, { recursive: true, force: true });
    rmSync(sharedHome, { recursive: true, force: true });
    const bull = 'BullMQ on the same Redis, the same jobs (bullAdd)';
    const rows: BenchRow[] = [
      {
        name: `shared queue: acknowledged pushes/s (${PRODUCERS} producers, appendfsync always), median of 3`,
        value: median(kp),
        unit: 'pushes/s',
        peer: `${bull}: Queue.add`,
        peerValue: median(bp),
        budget: 'report',
        ok: true,
      },
    ];
    for (const n of RUNNER_COUNTS) {
      const k = keelRate.get(n)!;
      const b = bullRate.get(n)!;
      rows.push({
        name: `shared queue: take+settle actions/s, ${n} runner process${n > 1 ? 'es' : ''} (${CARRIED} actions, no work), median of 3`,
        value: k,
        unit: 'actions/s',
        peer: `${bull}: ${n} process${n > 1 ? 'es' : ''}, a Worker each (concurrency 1, empty processor)`,
        peerValue: b,
        budget: `>= ${(1 / 1.3).toFixed(2)}x peer (overhead <= 1.3x)`,
        ok: k * 1.3 >= b,
      });
    }
    rows.push(
      {
        name: 'shared queue: take+settle actions/s, 4 runner processes, median of 3',
        value: keelRate.get(4)!,
        unit: 'actions/s',
        peer: 'the same with 1 runner process',
        peerValue: keelRate.get(1)!,
        budget: '>= 1x peer',
        ok: keelRate.get(4)! >= keelRate.get(1)!,
      },
      {
        name: `shared queue: \`keel run\` joins after a ${BACKLOG / 1000}k backlog (start to ready), median of 3`,
        value: joined.backlog.ms,
        unit: 'ms',
        peer: 'the same on an empty queue',
        peerValue: joined.empty.ms,
        budget: '<= 2x peer',
        ok: joined.backlog.ms <= 2 * joined.empty.ms,
      },
      {
        name: `shared queue: RSS of \`keel run\` once ready after a ${BACKLOG / 1000}k backlog, median of 3`,
        value: joined.backlog.rssMiB,
        unit: 'MiB',
        peer: 'the same on an empty queue',
        peerValue: joined.empty.rssMiB,
        budget: '<= 2x peer',
        ok: joined.backlog.rssMiB <= 2 * joined.empty.rssMiB,
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
    );
    return rows;
  } finally {
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--runner') await runnerProcess(JSON.parse(process.argv[3]!) as RunnerJob);
else if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) printRows(await benchSharedQueue());
