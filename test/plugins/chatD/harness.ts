/**
 * A real kernel with the agent, the chatD plugin (real Bolt, web-api, socket-mode) and the scripted fake provider,
 * talking to the loopback Slack Web API and Socket Mode WebSocket.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import type { PluginCandidate } from '../../../kernel/plugins/discover.js';
import type { Action, ChannelCapability } from '../../../sdk/index.js';
import { installFakeProvider, type FakeProviderControl } from '../../../sdk/testing/index.js';
import { startFakeSlack, type FakeSlack } from '../../fakes/slack-server.js';
import { rm, tmp } from '../../helpers.js';
import { agentCandidate } from '../agent/harness.js';
import { builtinCandidate } from '../chatA/harness.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');

export async function chatDCandidate(): Promise<PluginCandidate> {
  return {
    id: 'chatD',
    origin: 'builtin',
    dir: join(ROOT, 'plugins', 'chatD'),
    manifest: (await import('../../../plugins/chatD/manifest.js')).default,
    load: async () => (await import('../../../plugins/chatD/index.js')).default,
  };
}

export interface ChatDHarness {
  home: string;
  slack: FakeSlack;
  kernel: Kernel;
  logs: LogSink;
  model: FakeProviderControl;
  channel(): ChannelCapability;
  actions(): Action[];
  restart(): Promise<void>;
  close(): Promise<void>;
}

export const ADMIN = 'U0ADMIN01';

export async function bootChatD(
  o: { config?: Record<string, unknown>; runAgent?: boolean; plugins?: string[]; pingMs?: number } = {},
): Promise<ChatDHarness> {
  const home = tmp('keel-chatd-');
  const builtins = tmp('keel-chatd-builtins-');
  const slack = await startFakeSlack(o.pingMs !== undefined ? { pingMs: o.pingMs } : {});
  const model = installFakeProvider(home);
  const config = {
    llmProvider: 'fake',
    modelName: 'fake-model',
    chatDBotToken: slack.botToken,
    chatDAppToken: slack.appToken,
    chatDApiUrl: slack.apiUrl,
    chatDAutoReplyEnabled: true,
    adminUsers: { chatD: [ADMIN] },
    ...o.config,
  };
  writeFileSync(join(home, 'keel.config.yaml'), `${JSON.stringify(config, null, 2)}\n`);
  const extraPlugins = [await agentCandidate(), await chatDCandidate(), ...(await Promise.all((o.plugins ?? []).map(builtinCandidate)))];
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
    slack,
    model,
    get kernel() {
      return kernel;
    },
    get logs() {
      return logs;
    },
    channel: () => kernel.registry.use<ChannelCapability>('channel:chatD')!,
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
      await slack.close();
      rm(home);
      rm(builtins);
    },
  };
}
