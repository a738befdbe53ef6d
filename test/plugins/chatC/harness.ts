/**
 * A real kernel with the agent, the chatC plugin and the scripted fake provider, talking to the loopback Discord.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import type { PluginCandidate } from '../../../kernel/plugins/discover.js';
import type { Action, ChannelCapability } from '../../../sdk/index.js';
import { installFakeProvider, type FakeProviderControl } from '../../../sdk/testing/index.js';
import { startFakeDiscord, type FakeDiscord } from '../../fakes/discord-server.js';
import { rm, tmp } from '../../helpers.js';
import { agentCandidate } from '../agent/harness.js';
import { builtinCandidate } from '../chatA/harness.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');

export const ADMIN = '420000000000000042';
export const USER = '430000000000000043';

export async function chatCCandidate(): Promise<PluginCandidate> {
  return {
    id: 'chatC',
    origin: 'builtin',
    dir: join(ROOT, 'plugins', 'chatC'),
    manifest: (await import('../../../plugins/chatC/manifest.js')).default,
    load: async () => (await import('../../../plugins/chatC/index.js')).default,
  };
}

export interface ChatCHarness {
  home: string;
  dc: FakeDiscord;
  kernel: Kernel;
  logs: LogSink;
  model: FakeProviderControl;
  channel(): ChannelCapability;
  actions(): Action[];
  restart(): Promise<void>;
  close(): Promise<void>;
}

export async function bootChatC(
  o: { config?: Record<string, unknown>; token?: string; runAgent?: boolean; plugins?: string[]; heartbeatMs?: number } = {},
): Promise<ChatCHarness> {
  const home = tmp('keel-chatc-');
  const builtins = tmp('keel-chatc-builtins-');
  const dc = await startFakeDiscord({ heartbeatMs: o.heartbeatMs ?? 400 });
  const model = installFakeProvider(home);
  const config = {
    llmProvider: 'fake',
    modelName: 'fake-model',
    chatCToken: o.token ?? dc.token,
    chatCApiUrl: dc.apiUrl,
    chatCAutoReplyEnabled: true,
    adminUsers: { chatC: [ADMIN] },
    ...o.config,
  };
  writeFileSync(join(home, 'keel.config.yaml'), `${JSON.stringify(config, null, 2)}\n`);
  const extraPlugins = [await agentCandidate(), await chatCCandidate(), ...(await Promise.all((o.plugins ?? []).map(builtinCandidate)))];
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
  return {
    home,
    dc,
    model,
    get kernel() {
      return kernel;
    },
    get logs() {
      return logs;
    },
    channel: () => kernel.registry.use<ChannelCapability>('channel:chatC')!,
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
      await dc.close();
      rm(home);
      rm(builtins);
    },
  };
}
