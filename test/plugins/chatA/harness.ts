/**
 * A real kernel with the agent, the chatA plugin and the scripted fake provider, talking to the loopback Bot API.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import type { PluginCandidate } from '../../../kernel/plugins/discover.js';
import type { Action, ChannelCapability } from '../../../sdk/index.js';
import { installFakeProvider, type FakeProviderControl } from '../../../sdk/testing/index.js';
import { startFakeTelegram, type FakeTelegram } from '../../fakes/telegram-server.js';
import { rm, tmp } from '../../helpers.js';
import { agentCandidate } from '../agent/harness.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');

export async function chatACandidate(): Promise<PluginCandidate> {
  return {
    id: 'chatA',
    origin: 'builtin',
    dir: join(ROOT, 'plugins', 'chatA'),
    manifest: (await import('../../../plugins/chatA/manifest.js')).default,
    load: async () => (await import('../../../plugins/chatA/index.js')).default,
  };
}

export interface ChatAHarness {
  home: string;
  tg: FakeTelegram;
  kernel: Kernel;
  logs: LogSink;
  model: FakeProviderControl;
  channel(): ChannelCapability;
  actions(): Action[];
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** Built-in plugins some tests add beside chatA (static imports: the test bundler needs them spelled out). */
const MORE: Record<string, () => Promise<Pick<PluginCandidate, 'manifest' | 'load'>>> = {
  messaging: async () => ({
    manifest: (await import('../../../plugins/messaging/manifest.js')).default,
    load: async () => (await import('../../../plugins/messaging/index.js')).default,
  }),
  providerA: async () => ({
    manifest: (await import('../../../plugins/providerA/manifest.js')).default,
    load: async () => (await import('../../../plugins/providerA/index.js')).default,
  }),
};

export async function builtinCandidate(id: string): Promise<PluginCandidate> {
  const more = MORE[id];
  if (!more) throw new Error(`harness: no import for plugin ${id}`);
  return { id, origin: 'builtin', dir: join(ROOT, 'plugins', id), ...(await more()) };
}

export async function bootChatA(
  o: { config?: Record<string, unknown>; token?: string; runAgent?: boolean; plugins?: string[] } = {},
): Promise<ChatAHarness> {
  const home = tmp('keel-chata-');
  const builtins = tmp('keel-chata-builtins-');
  const tg = await startFakeTelegram();
  const model = installFakeProvider(home);
  const config = {
    llmProvider: 'fake',
    modelName: 'fake-model',
    chatAToken: o.token ?? tg.token,
    chatAApiRoot: tg.apiRoot,
    chatAPollTimeout: 1,
    chatAAutoReplyEnabled: true,
    adminUsers: { chatA: ['42'] },
    ...o.config,
  };
  writeFileSync(join(home, 'keel.config.yaml'), `${JSON.stringify(config, null, 2)}\n`);
  const extraPlugins = [await agentCandidate(), await chatACandidate(), ...(await Promise.all((o.plugins ?? []).map(builtinCandidate)))];
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
  const h: ChatAHarness = {
    home,
    tg,
    model,
    get kernel() {
      return kernel;
    },
    get logs() {
      return logs;
    },
    channel: () => kernel.registry.use<ChannelCapability>('channel:chatA')!,
    actions() {
      const l = kernel.queue.list();
      return [...l.pending, ...l.completed, ...l.failed];
    },
    async restart() {
      await kernel.stop();
      await start();
    },
    async close() {
      await kernel.stop();
      await tg.close();
      rm(home);
      rm(builtins);
    },
  };
  return h;
}
