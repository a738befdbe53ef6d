import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../kernel/kernel.js';
import { LogSink } from '../../kernel/log.js';
import { installFakeAgent } from '../../testing/index.js';
import { rm, tmp, waitFor } from '../helpers.js';

let kernel: Kernel | undefined;
let dirs: string[] = [];
afterEach(async () => {
  await kernel?.stop();
  kernel = undefined;
  dirs.forEach(rm);
  dirs = [];
});

async function boot(withAgent: boolean): Promise<Kernel> {
  const home = tmp();
  const builtins = tmp('keel-builtins-');
  dirs.push(home, builtins);
  if (withAgent) installFakeAgent(home);
  kernel = await startKernel({
    home,
    builtinDir: builtins,
    env: {},
    watchSkills: false,
    runAgent: true,
    logs: new LogSink({ quiet: true }),
    runner: { maxIdleMs: 100 },
  });
  return kernel;
}

const ranIds = (k: Kernel) =>
  readFileSync(join(k.home, 'fake-agent.log'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { id: string }).id);

describe('runner', () => {
  it('keeps actions pending and says why when no plugin provides the agent', async () => {
    const k = await boot(false);
    await k.queue.push({ task: 'wait for me' });
    await waitFor(() => k.runner!.status().state === 'waiting', 'runner to report waiting');
    expect(k.runner!.status().reason).toMatch(/agent/);
    expect(k.queue.counts().pending).toBe(1);
  });

  it('says once why actions wait: "will wait" with an empty queue, how many wait when some do', async () => {
    const k = await boot(false);
    await waitFor(() => k.runner!.status().state === 'waiting', 'runner to report waiting');
    const lines = () => k.logs.recent({ level: 'warn', limit: 100 }).map((e) => e.message);
    expect(lines().filter((l) => /wait/.test(l))).toEqual([
      'Actions will wait in the queue: no plugin provides the "agent" capability, so actions wait in the queue.',
    ]);
    await k.queue.push({ task: 'wait for me' });
    await k.stop();
    // The same home with the built-in plugins: the agent is there now, but no model is configured.
    kernel = await startKernel({
      home: k.home,
      env: {},
      watchSkills: false,
      runAgent: true,
      logs: new LogSink({ quiet: true }),
      runner: { maxIdleMs: 100 },
    });
    await waitFor(() => kernel!.runner!.status().state === 'waiting', 'runner to report waiting again');
    expect(kernel.logs.recent({ level: 'warn', limit: 100 }).map((e) => e.message)).toContain(
      '1 action(s) are waiting: no model configured: set modelName (and llmProvider or a provider key), e.g. keel config set modelName gpt-4o-mini.',
    );
  });

  it('runs actions by priority, FIFO within a priority, and records the result', async () => {
    const k = await boot(true);
    // Queue while the agent is busy so order is decided by the queue, not by arrival.
    const blocker = await k.queue.push({ task: 'sleep:300 first', priority: 10 });
    await waitFor(() => k.runner!.status().current === blocker.id, 'blocker to start');
    const low = await k.queue.push({ task: 'low', priority: 2 });
    const highA = await k.queue.push({ task: 'high a', priority: 9 });
    const highB = await k.queue.push({ task: 'high b', priority: 9 });
    await waitFor(() => k.queue.counts().completed === 4, 'all four to complete');
    expect(ranIds(k)).toEqual([blocker.id, highA.id, highB.id, low.id]);
    expect(k.queue.get(highA.id)).toMatchObject({ status: 'completed', result: 'done: high a' });
  });

  it('retries a failing action with backoff, then fails it with the reason, emitting lifecycle hooks', async () => {
    const k = await boot(true);
    const settled: string[] = [];
    k.hooks.actionSettled.tapPromise('test', async (a, o) => {
      settled.push(`${a.id}:${o.status}`);
    });
    const a = await k.queue.push({ task: 'please fail', maxRetries: 1 });
    await waitFor(() => k.queue.counts().failed === 1, 'the action to fail for good');
    expect(ranIds(k)).toEqual([a.id, a.id]);
    expect(settled).toEqual([`${a.id}:retry`, `${a.id}:failed`]);
    const failed = k.queue.list().failed[0]!;
    expect(failed.error).toMatch(/fake failure/);
    expect(failed.metadata.retries).toBe(1);
  });
});

describe('running kernel configuration', () => {
  it('applies edits of keel.config.yaml made by another process, and keeps the last good config on a broken edit', async () => {
    const { writeFileSync } = await import('node:fs');
    const k = await boot(false);
    expect(k.config.get('safeMode')).toBe(false);
    writeFileSync(join(k.home, 'keel.config.yaml'), 'safeMode: true\n');
    await waitFor(() => k.config.get('safeMode') === true, 'safeMode to be picked up');
    writeFileSync(join(k.home, 'keel.config.yaml'), 'safeMode: [unclosed\n');
    await waitFor(
      () => k.logs.recent({ level: 'error' }).some((e) => /last good configuration/.test(e.message)),
      'the broken edit to be reported',
    );
    expect(k.config.get('safeMode')).toBe(true);
  });

  it('runs lanes side by side, one action at a time per lane', async () => {
    const k = await boot(true);
    const events: string[] = [];
    const label = (task: string) => task.split(' ').at(-1);
    k.hooks.actionStarted.tapPromise('test', async (a) => void events.push(`start ${label(a.task)}`));
    k.hooks.actionSettled.tapPromise('test', async (a) => void events.push(`end ${label(a.task)}`));
    const main = await k.queue.push({ task: 'sleep:800 main' });
    await waitFor(() => k.runner!.status().current === main.id, 'the main action to start');
    const b1 = await k.queue.push({ task: 'sleep:300 b1', metadata: { lane: 'b' } });
    const b2 = await k.queue.push({ task: 'sleep:10 b2', metadata: { lane: 'b' } });
    await waitFor(() => k.runner!.status().lanes?.b === b1.id, 'lane b to run b1 while main runs');
    expect(k.runner!.status().lanes).toEqual({ main: main.id, b: b1.id });
    await waitFor(() => k.queue.counts().completed === 3, 'all three to complete');
    // b1 started and finished while main ran; b2 waited for b1 (its lane), not for main.
    expect(events.indexOf('start b1')).toBeLessThan(events.indexOf('end main'));
    expect(events.indexOf('end b1')).toBeLessThan(events.indexOf('start b2'));
    expect(events.indexOf('end b2')).toBeLessThan(events.indexOf('end main'));
    expect(k.queue.get(b2.id)).toMatchObject({ status: 'completed', result: 'done: sleep:10 b2' });
  });

  it('cancels: a pending action is removed, a running one is stopped and fails with the reason, never retried', async () => {
    const k = await boot(true);
    const settled: Array<[string, string, string | undefined]> = [];
    k.hooks.actionSettled.tapPromise('test', async (a, o) => void settled.push([a.id, o.status, o.detail]));
    // Retries left (the default): a cancel is not a failure to retry.
    const running = await k.queue.push({ task: 'sleep:30000 long' });
    await waitFor(() => k.runner!.status().current === running.id, 'the long action to start');
    const waiting = await k.queue.push({ task: 'never' });
    expect(await k.cancel(waiting.id, 'not needed')).toBe('removed');
    expect(k.queue.get(waiting.id)).toBeUndefined();
    expect(await k.cancel(running.id, 'stopped by the test')).toBe('stopping');
    const failed = await waitFor(
      () => (k.queue.get(running.id)?.status === 'failed' ? k.queue.get(running.id) : undefined),
      'the long action to fail',
    );
    expect(failed.error).toBe('stopped by the test');
    expect(settled).toEqual([
      [waiting.id, 'removed', 'not needed'],
      [running.id, 'failed', 'stopped by the test'],
    ]);
    expect(failed.metadata.retries).toBe(0);
    expect(await k.cancel(running.id, 'again')).toBe('settled');
    expect(await k.cancel('act_0_nope', 'x')).toBe('unknown');
    // Run once: no retry was scheduled behind the cancel.
    const after = await k.queue.push({ task: 'sleep:1 after' });
    await waitFor(() => k.queue.get(after.id)?.status === 'completed', 'the next action to run');
    expect(ranIds(k).filter((id) => id === running.id)).toHaveLength(1);
  });

  it('cancels an action running in another process on the same home (a gateway or keel ui beside keel run)', async () => {
    const k = await boot(true);
    const running = await k.queue.push({ task: 'sleep:30000 long' });
    await waitFor(() => k.runner!.status().current === running.id, 'the long action to start');
    const builtins = tmp('keel-builtins-');
    dirs.push(builtins);
    // A second kernel on the same home without a runner: it does not own the queue.
    const other = await startKernel({
      home: k.home,
      builtinDir: builtins,
      env: {},
      watchSkills: false,
      runAgent: false,
      logs: new LogSink({ quiet: true }),
    });
    try {
      expect(other.runner).toBeUndefined();
      await waitFor(() => other.queue.get(running.id)?.status === 'executing', 'the other process to see it running');
      expect(await other.cancel(running.id, 'stopped from the other process')).toBe('stopping');
      const failed = await waitFor(
        () => (k.queue.get(running.id)?.status === 'failed' ? k.queue.get(running.id) : undefined),
        'the runner to stop it',
      );
      expect(failed).toMatchObject({ error: 'stopped from the other process', metadata: { retries: 0 } });
      await waitFor(() => other.queue.get(running.id)?.status === 'failed', 'the other process to see it failed');
    } finally {
      await other.stop();
    }
  });
});
