/**
 * Several machines, one queue (queueRedisUrl, docs/scaling.md), through the real CLI and real kernels: two
 * `keel run --daemon` processes, each with its own KEEL_HOME as on two machines, share a queue in a real
 * redis-server; `keel push` from a third home lands in it; every action runs exactly once; `kill -9` of a runner
 * mid-action hands its action to the other after the lease; an action that came from a chat stays with the runner
 * whose channel received it.
 */
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Action, ChannelCapability, KernelInfoCapability } from '../../sdk/index.js';
import { appendPush, readQueueList } from '../../kernel/queue/index.js';
import { bootKernel, installFakeAgent, type TestKernel } from '../../testing/index.js';
import { keelCli, rm, tmp, waitFor } from '../helpers.js';
import { redisProblem, type SharedRedis, sharedRedis } from '../redis-server.js';

const ECHO = join(import.meta.dirname, '..', '..', 'examples', 'plugins', 'echo-channel');
const problem = redisProblem();
const server = sharedRedis();
let redis: SharedRedis;
let n = 0;

beforeAll(() => {
  if (!problem) redis = server();
});

const keel = keelCli;

const homes: string[] = [];
const kernels: TestKernel[] = [];
afterEach(async () => {
  for (const k of kernels.splice(0)) await k.close().catch(() => {});
  for (const h of homes.splice(0)) {
    await keel(h, ['stop', '--timeout', '3000']);
    rm(h);
  }
});

/** The signing key the machines of the first test share (queueRedisSigningKey). */
const SIGNING_KEY = 'e2e-signing-key-0123456789abcdefghij';

/** A "machine": its own home, configured for the shared queue through keel.config.yaml (`signed`: with a key). */
function machine(prefix: string, withAgent = true, signed = false): string {
  const h = tmp('keel-machine-');
  homes.push(h);
  const key = signed ? `queueRedisSigningKey: "${SIGNING_KEY}"\n` : '';
  writeFileSync(
    join(h, 'keel.config.yaml'),
    `queueRedisUrl: ${redis.url}\nqueueRedisPrefix: "${prefix}"\nqueueWorkerLeaseSeconds: 2\n${key}`,
    {
      mode: 0o600,
    },
  );
  if (withAgent) installFakeAgent(h);
  return h;
}

const ran = (h: string): Array<{ id: string; task: string; pid: number }> =>
  existsSync(join(h, 'fake-agent.log'))
    ? readFileSync(join(h, 'fake-agent.log'), 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { id: string; task: string; pid: number })
    : [];

async function tasks(h: string) {
  const out = await keel(h, ['tasks', '--json']);
  if (out.code !== 0) throw new Error(`keel tasks failed (${out.code}): ${out.stderr}`);
  return JSON.parse(out.stdout) as {
    pending: Array<{ id: string; status: string }>;
    completed: Array<{ id: string; result: string }>;
    failed: Array<{ id: string }>;
  };
}

describe.skipIf(problem)('one queue, several machines (Redis)', () => {
  it('two runners share the work of pushes made elsewhere, each action once; kill -9 of one hands its action over (signed)', async () => {
    const prefix = `e2e${++n}-${redis.prefix}`;
    const [a, b, cli] = [machine(prefix, true, true), machine(prefix, true, true), machine(prefix, false, true)];
    expect((await keel(a, ['run', '--daemon'])).code).toBe(0);
    expect((await keel(b, ['run', '--daemon'])).code).toBe(0);
    // a long action first: one runner takes it and is killed in the middle of it
    const long = await keel(cli, ['push', 'sleep:60000 the long one', '-p', '9', '--json']);
    expect(long.code, long.stderr).toBe(0);
    const longId = (JSON.parse(long.stdout) as { id: string }).id;
    const holder = await waitFor(() => [a, b].find((h) => ran(h).some((r) => r.id === longId)), 'a runner to start the long action');
    const other = holder === a ? b : a;
    const pushed: string[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await keel(cli, ['push', `task ${i}`, '--json']);
      expect(r.code, r.stderr).toBe(0);
      pushed.push((JSON.parse(r.stdout) as { id: string }).id);
    }
    await waitFor(async () => (await tasks(cli)).completed.length === 12, 'the twelve to complete', 30_000);
    // `keel status` on the machine without a runner shows the shared queue and both runners
    const shared = JSON.parse((await keel(cli, ['status', '--json'])).stdout) as {
      running: boolean;
      waiting: string | null;
      sharedQueue: { url: string; prefix: string; runners: Array<{ pid: number }> };
    };
    expect(shared).toMatchObject({ running: false, waiting: null, sharedQueue: { url: `redis://127.0.0.1:${redis.port}`, prefix } });
    expect(shared.sharedQueue.runners).toHaveLength(2);
    const text = (await keel(cli, ['status'])).stdout;
    expect(text).toMatch(new RegExp(`Shared queue: redis://127\\.0\\.0\\.1:${redis.port} \\(prefix ${prefix}\\); 2 runners: `));
    const pid = (JSON.parse(readFileSync(join(holder, 'run', 'agent.pid'), 'utf8')) as { pid: number }).pid;
    process.kill(pid, 'SIGKILL');
    // after the lease (2 s) the other runner takes the long action over
    await waitFor(() => ran(other).some((r) => r.id === longId), 'the other runner to take the long action over', 20_000);
    const all = [...ran(a), ...ran(b)].map((r) => r.id);
    for (const id of pushed)
      expect(
        all.filter((x) => x === id),
        id,
      ).toHaveLength(1);
    expect(all.filter((x) => x === longId)).toHaveLength(2);
    const status = JSON.parse((await keel(cli, ['status', '--json'])).stdout) as { queue: { pending: number; completed: number } };
    expect(status.queue).toMatchObject({ pending: 1, completed: 12 });
    // Every job in BullMQ (keel push's and the runners') carries a signature.
    const { Queue } = await import('bullmq');
    const main = new Queue('main', { connection: { host: '127.0.0.1', port: redis.port }, prefix: `${prefix}bull` });
    try {
      const jobs = await main.getJobs(['completed', 'prioritized', 'wait', 'active'], 0, 100);
      expect(jobs.length).toBeGreaterThanOrEqual(12);
      for (const j of jobs) expect((j.data as { sig?: string }).sig).toMatch(/^[A-Za-z0-9_-]{43}$/);
    } finally {
      await main.close();
    }
  }, 120_000);

  it("a chat's action runs on the runner whose channel received it, and moves only when that runner is gone", async () => {
    const prefix = `chat${++n}-${redis.prefix}`;
    const config = { queueRedisUrl: redis.url, queueRedisPrefix: prefix, queueWorkerLeaseSeconds: 2, echoChannelPort: 0 };
    const bootMachine = async (withEcho: boolean) => {
      const t = await bootKernel({
        runAgent: true,
        before: (home) => {
          installFakeAgent(home);
          if (withEcho) cpSync(ECHO, join(home, 'plugins', 'echo-channel'), { recursive: true });
        },
        config,
      });
      kernels.push(t);
      return t;
    };
    const a = await bootMachine(true);
    const b = await bootMachine(false);
    // a's runner is stopped but a is alive (its lease held): b must leave a's chat actions alone
    await a.kernel.runner!.stop();
    const echo = a.kernel.registry.use<ChannelCapability & { url: string }>('channel:echo')!;
    const res = await fetch(`${echo.url}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chatId: 'room-1', userId: 'alice', text: 'from the chat', messageId: 'p-1' }),
    });
    const { actionId } = (await res.json()) as { actionId: string };
    await waitFor(() => b.kernel.queue.get(actionId), 'b to see the chat action');
    expect(b.kernel.queue.get(actionId)!.metadata.originWorker).toBe(a.kernel.queue.worker);
    const other = await b.kernel.queue.push({ task: 'anyone may run this' });
    await waitFor(() => ran(b.home).some((r) => r.id === other.id), 'b to run the task that is not pinned');
    await new Promise((r) => setTimeout(r, 1500));
    expect(ran(b.home).some((r) => r.id === actionId)).toBe(false);
    expect(b.kernel.queue.get(actionId)!.status).toBe('pending');
    // a goes away; b has no echo channel, so the action still waits for a runner that has one
    await a.close();
    kernels.splice(kernels.indexOf(a), 1);
    await new Promise((r) => setTimeout(r, 2500));
    expect(ran(b.home).some((r) => r.id === actionId)).toBe(false);
    // a machine with the echo channel comes up (a new runner): it takes the action over
    const c = await bootMachine(true);
    await waitFor(() => ran(c.home).some((r) => r.id === actionId), 'the new runner with the channel to run it', 15_000);
    expect(ran(b.home).some((r) => r.id === actionId)).toBe(false);
  });

  it('a message one machine queued is a duplicate on every other (a catch-up after the connection moved)', async () => {
    const prefix = `dup${++n}-${redis.prefix}`;
    const config = { queueRedisUrl: redis.url, queueRedisPrefix: prefix, echoChannelPort: 0, echoChannelAutoReply: true };
    const boot = async () => {
      const t = await bootKernel({
        runAgent: false,
        before: (home) => cpSync(ECHO, join(home, 'plugins', 'echo-channel'), { recursive: true }),
        config,
      });
      kernels.push(t);
      return t;
    };
    const post = async (t: TestKernel, messageId: string) => {
      const echo = t.kernel.registry.use<ChannelCapability & { url: string }>('channel:echo')!;
      const res = await fetch(`${echo.url}/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ chatId: 'room-1', userId: 'alice', text: `message ${messageId}`, messageId }),
      });
      return (await res.json()) as { outcome: string; reason?: string; actionId?: string };
    };
    const a = await boot();
    const b = await boot();
    // b has handled a message before (its own memory of what it saw is set up from the queue at that point)
    expect((await post(b, 'm-0')).outcome).toBe('queued');
    const first = await post(a, 'm-1');
    expect(first.outcome).toBe('queued');
    await waitFor(() => b.kernel.queue.get(first.actionId!), 'b to see the action a queued');
    // the same message reaches b (its catch-up read it again): recognised, nothing queued twice
    expect(await post(b, 'm-1')).toEqual({ outcome: 'ignored', reason: 'duplicate' });
    expect(b.kernel.queue.list().pending.filter((x) => x.task.includes('message m-1'))).toHaveLength(1);
  });

  it('a process without a runner (a gateway, the dashboard) knows whether a runner works on the queue elsewhere', async () => {
    const prefix = `obs${++n}-${redis.prefix}`;
    const config = { queueRedisUrl: redis.url, queueRedisPrefix: prefix, queueWorkerLeaseSeconds: 2 };
    const observer = await bootKernel({ runAgent: false, config });
    kernels.push(observer);
    const info = observer.kernel.registry.use<KernelInfoCapability>('kernel:info')!;
    expect(info.agentRunning()).toBe(false);
    const runner = await bootKernel({ runAgent: true, before: (home) => installFakeAgent(home), config });
    kernels.push(runner);
    await waitFor(() => info.agentRunning(), 'the observer to see the runner');
    await runner.close();
    kernels.splice(kernels.indexOf(runner), 1);
    await waitFor(() => !info.agentRunning(), 'the observer to see the runner gone', 15_000);
  });

  it("a runner switched to the shared queue moves what waited in its home's file queue, and runs it once", async () => {
    const prefix = `move${++n}-${redis.prefix}`;
    const home = tmp('keel-machine-');
    homes.push(home);
    const before: Action[] = [];
    for (let i = 0; i < 3; i++) before.push(await appendPush(home, { task: `queued before the switch ${i}` }));
    const t = await bootKernel({
      home,
      runAgent: true,
      before: (h) => installFakeAgent(h),
      config: { queueRedisUrl: redis.url, queueRedisPrefix: prefix },
    });
    kernels.push(t);
    await waitFor(() => before.every((a) => ran(home).some((r) => r.id === a.id)), 'the moved actions to run');
    expect((await readQueueList(home)).pending).toEqual([]);
    expect(t.kernel.logs.recent({ limit: 100 }).map((e) => e.message)).toContain(
      "Queue: moved 3 action(s) that waited in this home's file queue to the shared queue.",
    );
    await t.close();
    kernels.splice(kernels.indexOf(t), 1);
    // a second start moves nothing and runs nothing again
    const again = await bootKernel({ home, runAgent: true, config: { queueRedisUrl: redis.url, queueRedisPrefix: prefix } });
    kernels.push(again);
    await new Promise((r) => setTimeout(r, 500));
    expect(ran(home).filter((r) => before.some((a) => a.id === r.id))).toHaveLength(3);
  });
});
