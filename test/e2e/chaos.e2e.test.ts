/**
 * Chaos on the shared queue (queueRedisUrl, docs/scaling.md "The chaos test"), at the process level only, so it
 * holds for whichever engine `keel run` uses: three `keel run` runner processes (each its own KEEL_HOME, as on three
 * machines) and one `keel gateway` process that takes the pushes over REST, all on a private redis-server with
 * `appendonly yes` and `appendfsync always`. 600 tasks are pushed while the runners work; a runner is killed with
 * SIGKILL three times (and started again each time), and Redis once (started again on the same port and data
 * directory); each runner is killed just after its skill ran for an action, before the action completes. The
 * runners' agent is a plugin without a model whose skill appends "<action id>\n" to one shared file.
 *
 * An acknowledged task is one whose push answered 201 with an id. At the end it prints
 * - lost: acknowledged, never run (no line in the file), and no longer waiting in the queue (gone, or failed
 *   without running);
 * - doubled: run more than once (at-least-once delivery allows it: reported, not a failure);
 * - stuck: acknowledged and still pending or running in the queue when the bounded wait ended;
 * - recovery: from Redis's restart to the next action completed in the queue;
 * and fails on any lost or stuck acknowledged task.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEEL_CLI, keelCli, rm, tmp, waitFor } from '../helpers.js';
import { privateRedis, redisProblem, type TestRedis } from '../redis-server.js';

const problem = redisProblem();
const server = privateRedis();
let redis: TestRedis;
beforeAll(() => {
  if (!problem) redis = server();
});

const TASKS = 600;
const RUNNERS = 3;
const API_KEY = 'chaos-key-0123456789abcdefghijklmnop';
const PREFIX = `chaos-${process.pid}:`;

/** The runners' agent: no model; each action calls the skill `chaos_append`, which appends the action's id. */
function installChaosAgent(home: string): void {
  const dir = join(home, 'plugins', 'chaos-agent');
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'manifest.json'),
    JSON.stringify({
      id: 'chaos-agent',
      version: '1.0.0',
      kind: 'service',
      description: 'Chaos test agent: every action appends its id to $CHAOS_FILE through the skill chaos_append.',
      provides: ['agent'],
      skills: [
        {
          name: 'chaos_append',
          description: 'Appends an action id and a newline to the chaos file',
          category: 'test',
          parameters: { type: 'object', required: ['id'], properties: { id: { type: 'string' } }, additionalProperties: false },
        },
      ],
    }),
  );
  writeFileSync(
    join(dir, 'index.js'),
    `import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
export default {
  setup(ctx) {
    const file = process.env.CHAOS_FILE;
    const mine = join(ctx.home, 'chaos-ran.log');
    ctx.skills.register('chaos_append', ({ id }) => {
      appendFileSync(file, id + '\\n');
      appendFileSync(mine, id + '\\n');
      return 'appended';
    });
    ctx.provide('agent', {
      ready: () => ({ ready: true }),
      async execute(action) {
        const r = await ctx.skills.execute('chaos_append', { id: action.id }, { kind: 'operator', channel: 'cli' });
        // a little work after the line, so that a kill -9 often lands between the line and the completion
        await new Promise((r) => setTimeout(r, Number(process.env.CHAOS_WORK_MS || 0)));
        return { result: String(r.result) };
      },
    });
  },
};
`,
  );
}

interface Proc {
  child: ChildProcess;
  exited: Promise<void>;
}

function start(home: string, args: string[], env: Record<string, string>): Proc {
  const out = join(home, 'process.log');
  const child = spawn(process.execPath, [KEEL_CLI, ...args], {
    env: { ...process.env, KEEL_HOME: home, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (d: Buffer) => appendFileSync(out, d));
  child.stderr?.on('data', (d: Buffer) => appendFileSync(out, d));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return { child, exited };
}

async function kill9(p: Proc): Promise<void> {
  if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  await p.exited;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(problem)('chaos: kill -9 of runners and of Redis while 600 tasks go through the shared queue', () => {
  const homes: string[] = [];
  const procs: Proc[] = [];
  afterAll(async () => {
    for (const p of procs) await kill9(p);
    for (const h of homes) rm(h);
  });

  it('no acknowledged task is lost or stuck (prints lost, doubled, stuck, recovery)', async () => {
    const work = tmp('keel-chaos-');
    homes.push(work);
    const file = join(work, 'ran.log');
    writeFileSync(file, '');
    const env = { KEEL_QUEUE_REDIS_URL: redis.url, KEEL_QUEUE_REDIS_PREFIX: PREFIX, CHAOS_FILE: file, CHAOS_WORK_MS: '25' };

    // The gateway's machine: takes the pushes (REST), runs nothing.
    const gwHome = tmp('keel-chaos-gw-');
    homes.push(gwHome);
    writeFileSync(join(gwHome, 'keel.config.yaml'), `gatewayApiKey: "${API_KEY}"\n`, { mode: 0o600 });
    procs.push(start(gwHome, ['gateway', '-h', '127.0.0.1', '-p', '0'], env));
    const gw = await waitFor(
      () => {
        const f = join(gwHome, 'run', 'gateway.pid');
        if (!existsSync(f)) return undefined;
        const rec = JSON.parse(readFileSync(f, 'utf8')) as { ready?: boolean; gateway?: string };
        return rec.ready && rec.gateway ? rec.gateway : undefined;
      },
      'the gateway to listen',
      30_000,
    );
    const headers = { 'content-type': 'application/json', 'x-api-key': API_KEY };
    const pushOne = async (i: number): Promise<string | undefined> => {
      try {
        const res = await fetch(`${gw}/api/tasks`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ task: `chaos task ${i}` }),
          signal: AbortSignal.timeout(15_000),
        });
        if (res.status !== 201) return undefined;
        return ((await res.json()) as { taskId: string }).taskId;
      } catch {
        return undefined;
      }
    };
    /** The ids of the newest completed actions (the queue keeps the newest 100). */
    const completedIds = async (): Promise<Set<string> | undefined> => {
      try {
        const res = await fetch(`${gw}/api/tasks`, { headers, signal: AbortSignal.timeout(2000) });
        return res.ok ? new Set(((await res.json()) as { completed: Array<{ id: string }> }).completed.map((a) => a.id)) : undefined;
      } catch {
        return undefined;
      }
    };

    // Three runner machines.
    const runnerHomes = Array.from({ length: RUNNERS }, () => {
      const h = tmp('keel-chaos-runner-');
      homes.push(h);
      writeFileSync(
        join(h, 'keel.config.yaml'),
        'queueWorkerLeaseSeconds: 2\npluginAllowList:\n  - chaos-agent\npluginDenyList:\n  - agent\n',
        { mode: 0o600 },
      );
      installChaosAgent(h);
      return h;
    });
    const runners = runnerHomes.map((h) => start(h, ['run'], env));
    procs.push(...runners);
    const lines = () => readFileSync(file, 'utf8').split('\n').filter(Boolean);

    // Pushes at a steady pace (4 at a time) while the chaos below goes on.
    const acked: string[] = [];
    let unacked = 0;
    let next = 0;
    const pushing = Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < TASKS) {
          const i = next++;
          const id = await pushOne(i);
          if (id) acked.push(id);
          else unacked++;
          await sleep(40);
        }
      }),
    );

    const events: string[] = [];
    const t0 = Date.now();
    let kills = 0;
    const mineOf = (k: number) => join(runnerHomes[k]!, 'chaos-ran.log');
    const sizeOf = (k: number) => (existsSync(mineOf(k)) ? statSync(mineOf(k)).size : 0);
    /**
     * kill -9 of a runner just after its skill wrote a line: in the middle of that action, before it completes.
     * Runner `kills % 3` (each once) when it writes within 5 s, else whichever writes first.
     */
    const killRunner = async () => {
      const had = runners.map((_, k) => sizeOf(k));
      const wanted = kills % RUNNERS;
      const soon = Date.now() + 5_000;
      const deadline = soon + 5_000;
      let k = -1;
      while (k < 0 && Date.now() < deadline) {
        k = sizeOf(wanted) !== had[wanted] ? wanted : Date.now() > soon ? had.findIndex((h, i) => sizeOf(i) !== h) : -1;
        if (k < 0) await sleep(1);
      }
      if (k < 0) k = wanted;
      kills++;
      await kill9(runners[k]!);
      events.push(`${((Date.now() - t0) / 1000).toFixed(1)}s kill -9 runner ${k} (${lines().length} lines, ${acked.length} acknowledged)`);
      const again = start(runnerHomes[k]!, ['run'], env);
      runners[k] = again;
      procs.push(again);
    };
    // The chaos, each step once the runners have got that far (or after 20 s without getting there).
    const progress = (n: number) =>
      waitFor(() => lines().length >= n, `${n} lines`, 20_000).catch(() => events.push(`(${n} lines not reached in 20 s)`));
    let recoveryMs = Number.NaN;
    await progress(90);
    await killRunner();
    await progress(180);
    // Redis: what it acknowledged is on disk (appendfsync always); down for a second.
    await redis.kill();
    const linesBefore = lines().length;
    events.push(`${((Date.now() - t0) / 1000).toFixed(1)}s kill -9 redis (${linesBefore} lines, ${acked.length} acknowledged)`);
    await sleep(1000);
    await redis.restart();
    const restarted = Date.now();
    const linesAtRestart = lines().length;
    // Recovery: the first action taken after the restart (its skill ran after it) that the queue lists as completed.
    let firstRunMs = Number.NaN;
    const recovered = (async () => {
      while (Date.now() - restarted < 30_000) {
        const fresh = lines().slice(linesAtRestart);
        if (fresh.length && Number.isNaN(firstRunMs)) firstRunMs = Date.now() - restarted;
        const done = fresh.length ? await completedIds() : undefined;
        if (done && fresh.some((id) => done.has(id))) {
          recoveryMs = Date.now() - restarted;
          return;
        }
        await sleep(20);
      }
    })();
    await progress(300);
    await killRunner();
    await progress(420);
    await killRunner();
    await pushing;
    await recovered;

    // Every acknowledged task ran and nothing waits any more, or the bounded wait ends.
    const ackedSet = new Set(acked);
    const pendingIds = async (): Promise<Set<string> | undefined> => {
      const out = await keelCli(gwHome, ['tasks', '--json'], env);
      if (out.code !== 0) return undefined;
      return new Set((JSON.parse(out.stdout) as { pending: Array<{ id: string }> }).pending.map((a) => a.id));
    };
    let pending = new Set<string>();
    const deadline = Date.now() + 45_000;
    for (;;) {
      const ran = new Set(lines());
      pending = (await pendingIds()) ?? pending;
      const waiting = acked.filter((id) => pending.has(id)).length;
      if ((waiting === 0 && acked.every((id) => ran.has(id))) || Date.now() > deadline) break;
      await sleep(250);
    }

    const counts = new Map<string, number>();
    for (const id of lines()) counts.set(id, (counts.get(id) ?? 0) + 1);
    const lost = acked.filter((id) => !counts.has(id) && !pending.has(id));
    const stuck = acked.filter((id) => pending.has(id));
    const doubled = [...counts.entries()].filter(([id, n]) => n > 1 && ackedSet.has(id));
    const strangers = [...counts.keys()].filter((id) => !ackedSet.has(id)).length;
    const report = [
      `chaos: ${TASKS} pushed, ${acked.length} acknowledged, ${unacked} not acknowledged, ${RUNNERS} runners`,
      ...events.map((e) => `chaos:   ${e}`),
      `chaos: lost ${lost.length}, doubled ${doubled.length}, stuck ${stuck.length}, ran without an acknowledgement ${strangers}`,
      `chaos: recovery ${Number.isNaN(recoveryMs) ? 'none within 30 s' : `${recoveryMs} ms`} from Redis's restart to the next completion (next skill run: ${Number.isNaN(firstRunMs) ? 'none' : `${firstRunMs} ms`})`,
      `chaos: lines per runner home ${runnerHomes.map((h) => (existsSync(join(h, 'chaos-ran.log')) ? readFileSync(join(h, 'chaos-ran.log'), 'utf8').split('\n').filter(Boolean).length : 0)).join(', ')}`,
      `chaos: wall time ${((Date.now() - t0) / 1000).toFixed(1)} s`,
    ];
    console.log(report.join('\n'));
    expect({ lost: lost.slice(0, 10), stuck: stuck.slice(0, 10) }).toEqual({ lost: [], stuck: [] });
    expect(acked.length).toBeGreaterThan(0);
  }, 150_000);
});
