import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../kernel/kernel.js';
import { LogSink } from '../../kernel/log.js';
import { installFakeAgent } from '../../sdk/testing/index.js';
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
  kernel = await startKernel({ home, builtinDir: builtins, env: {}, watchSkills: false, runAgent: true, logs: new LogSink({ quiet: true }), runner: { maxIdleMs: 100 } });
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
    await waitFor(() => k.logs.recent({ level: 'error' }).some((e) => /last good configuration/.test(e.message)), 'the broken edit to be reported');
    expect(k.config.get('safeMode')).toBe(true);
  });
});
