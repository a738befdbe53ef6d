/**
 * What the chatA, chatC and chatD harnesses share: a real kernel with the agent, one channel plugin and the
 * scripted fake provider under a temporary home, restartable (a new process's view of the same home), closed with
 * the channel's fake.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { startKernel, type Kernel } from '../../kernel/kernel.js';
import { LogSink } from '../../kernel/log.js';
import type { PluginCandidate } from '../../kernel/plugins/discover.js';
import type { Action, ChannelCapability } from '../../sdk/index.js';
import { installFakeProvider, type FakeProviderControl } from '../../testing/index.js';
import { type PluginSpec, rm, tmp, waitFor, writePlugin } from '../helpers.js';
import { agentCandidate } from './agent/harness.js';

const ROOT = join(import.meta.dirname, '..', '..');

/** Built-in plugins the channel tests load (static imports: the test bundler needs them spelled out). */
const PLUGINS: Record<string, () => Promise<Pick<PluginCandidate, 'manifest' | 'load'>>> = {
  chatA: async () => ({
    manifest: (await import('../../plugins/chatA/manifest.js')).default,
    load: async () => (await import('../../plugins/chatA/index.js')).default,
  }),
  chatB: async () => ({
    manifest: (await import('../../plugins/chatB/manifest.js')).default,
    load: async () => (await import('../../plugins/chatB/index.js')).default,
  }),
  chatC: async () => ({
    manifest: (await import('../../plugins/chatC/manifest.js')).default,
    load: async () => (await import('../../plugins/chatC/index.js')).default,
  }),
  chatD: async () => ({
    manifest: (await import('../../plugins/chatD/manifest.js')).default,
    load: async () => (await import('../../plugins/chatD/index.js')).default,
  }),
  memory: async () => ({
    manifest: (await import('../../plugins/memory/manifest.js')).default,
    load: async () => (await import('../../plugins/memory/index.js')).default,
  }),
  messaging: async () => ({
    manifest: (await import('../../plugins/messaging/manifest.js')).default,
    load: async () => (await import('../../plugins/messaging/index.js')).default,
  }),
  gateway: async () => ({
    manifest: (await import('../../plugins/gateway/manifest.js')).default,
    load: async () => (await import('../../plugins/gateway/index.js')).default,
  }),
  system: async () => ({
    manifest: (await import('../../plugins/system/manifest.js')).default,
    load: async () => (await import('../../plugins/system/index.js')).default,
  }),
  providerA: async () => ({
    manifest: (await import('../../plugins/providerA/manifest.js')).default,
    load: async () => (await import('../../plugins/providerA/index.js')).default,
  }),
};

export async function builtinCandidate(id: string): Promise<PluginCandidate> {
  const more = PLUGINS[id];
  if (!more) throw new Error(`harness: no import for plugin ${id}`);
  return { id, origin: 'builtin', dir: join(ROOT, 'plugins', id), ...(await more()) };
}

export interface ChannelKernel {
  home: string;
  kernel: Kernel;
  logs: LogSink;
  model: FakeProviderControl;
  channel(): ChannelCapability;
  actions(): Action[];
  restart(): Promise<void>;
  close(): Promise<void>;
  /** The channel's `alive` mark in its kit.db (epoch ms), read, or set to `ms` (e.g. to fake an absence). */
  alive(ms?: number): number;
  /** The outcome the ingress recorded for an inbound key once handled (read beside the running channel; WAL allows it). */
  outcome(messageId: string): string | undefined;
  /** Every inbound key the ingress recorded, in the order recorded. */
  recorded(): string[];
}

/**
 * Boots `channel` with `config` (the fake model's settings added, then the caller's), more built-ins from
 * `plugins`, the agent running unless `runAgent` is false; `close` also closes the fake.
 */
export async function bootChannelKernel(o: {
  channel: 'chatA' | 'chatB' | 'chatC' | 'chatD';
  config: Record<string, unknown>;
  closeFake(): Promise<void>;
  runAgent?: boolean | undefined;
  plugins?: string[] | undefined;
  /** Test plugins written under the home's plugins folder (found there like any installed plugin). */
  extra?: PluginSpec[] | undefined;
}): Promise<ChannelKernel> {
  const home = tmp(`keel-${o.channel.toLowerCase()}-`);
  const builtins = tmp(`keel-${o.channel.toLowerCase()}-builtins-`);
  const model = installFakeProvider(home);
  const config = { llmProvider: 'fake', modelName: 'fake-model', ...o.config };
  writeFileSync(join(home, 'keel.config.yaml'), `${JSON.stringify(config, null, 2)}\n`);
  for (const p of o.extra ?? []) writePlugin(join(home, 'plugins'), p);
  const extraPlugins = [await agentCandidate(), ...(await Promise.all([o.channel, ...(o.plugins ?? [])].map(builtinCandidate)))];
  let kernel: Kernel;
  let logs = new LogSink({ quiet: true });
  const start = async () => {
    logs = new LogSink({ quiet: true });
    kernel = await startKernel({
      home,
      builtinDir: builtins,
      extraPlugins,
      env: {},
      watchSkills: false,
      watchConfig: false,
      runAgent: o.runAgent ?? true,
      logs,
      runner: { maxIdleMs: 50 },
    });
  };
  await start();
  const readKit = <T>(read: (db: DatabaseSync) => T): T => {
    const db = new DatabaseSync(join(home, 'channels', o.channel, 'kit.db'), { readOnly: true });
    try {
      return read(db);
    } finally {
      db.close();
    }
  };
  return {
    home,
    model,
    get kernel() {
      return kernel;
    },
    get logs() {
      return logs;
    },
    channel: () => kernel.registry.use<ChannelCapability>(`channel:${o.channel}`)!,
    actions() {
      const l = kernel.queue.list();
      return [...l.pending, ...l.completed, ...l.failed];
    },
    async restart() {
      await kernel.stop();
      await start();
    },
    alive(ms?: number) {
      const db = new DatabaseSync(join(home, 'channels', o.channel, 'kit.db'));
      try {
        if (ms !== undefined) db.prepare("UPDATE kv SET value = ? WHERE key = 'alive'").run(String(ms));
        return Number((db.prepare("SELECT value FROM kv WHERE key = 'alive'").get() as { value: string } | undefined)?.value);
      } finally {
        db.close();
      }
    },
    outcome(messageId: string) {
      return readKit((db) => {
        const row = db.prepare("SELECT outcome FROM inbound WHERE message_id = ? AND state = 'done'").get(messageId) as
          | { outcome: string }
          | undefined;
        return row?.outcome;
      });
    },
    recorded() {
      return readKit((db) =>
        (db.prepare('SELECT message_id FROM inbound ORDER BY rowid').all() as Array<{ message_id: string }>).map((r) => r.message_id),
      );
    },
    async close() {
      await kernel.stop();
      await o.closeFake();
      rm(home);
      rm(builtins);
    },
  };
}

/** Resolves when the child process has exited (at once if it already has). */
export const exited = (c: ChildProcess) =>
  new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r())));

/**
 * A Keel home for kill -9 tests: the scripted model answering `replies`, `config` on top of the fake model's, and
 * `start()` spawning `keel run` (dist/cli.js) with `env` (the channel's token and base URL). `close()` kills what is
 * left running, waits for it, and removes the home.
 */
export function crashHome(o: { prefix: string; replies: unknown[]; config: Record<string, unknown>; env: Record<string, string> }) {
  const home = tmp(o.prefix);
  installFakeProvider(home);
  writeFileSync(join(home, 'fake-provider-fake.json'), JSON.stringify({ replies: o.replies }));
  writeFileSync(
    join(home, 'keel.config.yaml'),
    `${JSON.stringify({ llmProvider: 'fake', modelName: 'fake-model', ...o.config }, null, 2)}\n`,
  );
  const children: ChildProcess[] = [];
  return {
    home,
    start(): ChildProcess {
      const env = { ...process.env, KEEL_HOME: home, NO_COLOR: '1', ...o.env };
      const child = spawn(process.execPath, [join(ROOT, 'dist', 'cli.js'), 'run'], { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      child.stderr!.on('data', (d) => (err += String(d)));
      child.on('exit', (code) => {
        if (code && code !== 0) console.error(`keel run exited ${code}: ${err.slice(-2000)}`);
      });
      children.push(child);
      return child;
    },
    async close() {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      await Promise.all(children.map(exited));
      rm(home);
    },
  };
}

/**
 * Scripts the fake model for an action that is still running when something reaches it: its first answer waits for
 * `release()`, and `second()` is what the model was shown at its next call (the input handed to the action meanwhile).
 * `started()` is true once the first call is under way.
 */
export function heldAnswer(model: FakeProviderControl, first: string, then: string) {
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => {
    release = r;
  });
  let started = false;
  let second: Array<{ role: string; content: string }> = [];
  model.replies.push(
    async () => {
      started = true;
      await gate;
      return { text: first };
    },
    (req) => {
      second = req.messages.map((m) => ({ ...m }));
      return { text: then };
    },
  );
  return { release: () => release(), started: () => started, second: () => second };
}

/** Resolves with the action once it completed. */
export const completed = (kernel: () => Kernel, id: string) =>
  waitFor(() => {
    const a = kernel().queue.get(id);
    return a?.status === 'completed' ? a : undefined;
  }, `action ${id} to complete`);
