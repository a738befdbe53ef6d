/** Delegation tests: a real kernel with the real agent, the delegation plugin, test tools and the scripted fake provider. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { discoverBuiltins } from '../../../kernel/plugins/discover.js';
import type { Action } from '../../../sdk/index.js';
import { installFakeProvider, type FakeProviderControl } from '../../../testing/index.js';
import { rm, tmp, waitFor, writePlugin } from '../../helpers.js';
import { agentCandidate, TOOLS } from '../agent/harness.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');

export interface Booted {
  kernel: Kernel;
  home: string;
  fake: FakeProviderControl;
}

const dirs: string[] = [];
const kernels: Kernel[] = [];

export async function boot(config: Record<string, unknown> = {}, opts: { runAgent?: boolean } = {}): Promise<Booted> {
  const home = tmp('keel-delegation-');
  dirs.push(home);
  writePlugin(join(home, 'plugins'), TOOLS);
  writeFileSync(
    join(home, 'keel.config.yaml'),
    `${JSON.stringify({ llmProvider: 'fake', modelName: 'fake-model', ...config }, null, 2)}\n`,
  );
  return bootAt(home, opts);
}

/** Starts a kernel on an existing home (a restart); the fake provider is (re)installed there. */
export async function bootAt(home: string, opts: { runAgent?: boolean } = {}): Promise<Booted> {
  const empty = tmp('keel-delegation-builtins-');
  dirs.push(empty);
  const fake = installFakeProvider(home);
  const delegation = (await discoverBuiltins(join(ROOT, 'plugins'))).find((c) => c.id === 'delegation')!;
  const kernel = await startKernel({
    home,
    builtinDir: empty,
    extraPlugins: [await agentCandidate(), delegation],
    env: {},
    watchSkills: false,
    runAgent: opts.runAgent ?? true,
    logs: new LogSink({ quiet: true }),
    runner: { maxIdleMs: 100 },
  });
  kernels.push(kernel);
  return { kernel, home, fake };
}

/** Stops one kernel (its home stays for a restart). */
export async function cleanupKernelOnly(k: Kernel): Promise<void> {
  kernels.splice(kernels.indexOf(k), 1);
  await k.stop();
}

export async function cleanup(): Promise<void> {
  for (const k of kernels.splice(0)) await k.stop();
  for (const d of dirs.splice(0)) rm(d);
}

export async function settle(k: Kernel, id: string): Promise<Action> {
  return waitFor(() => {
    const a = k.queue.get(id);
    return a && (a.status === 'completed' || a.status === 'failed') ? a : undefined;
  }, `action ${id} to settle`);
}

/** The tool results (role tool) a model call saw. */
export const toolMessages = (call: { messages: Array<{ role: string; content: string }> }) =>
  call.messages.filter((m) => m.role === 'tool').map((m) => m.content);
/** The task message (last user message before any tool traffic) of a model call. */
export const taskOf = (call: { messages: Array<{ role: string; content: string }> }) =>
  call.messages.find((m) => m.role === 'user')?.content ?? '';
