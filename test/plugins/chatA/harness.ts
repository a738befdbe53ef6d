/**
 * A real kernel with the agent, the chatA plugin and the scripted fake provider, talking to the loopback Bot API.
 */
import { startFakeTelegram, type FakeTelegram } from '../../fakes/telegram-server.js';
import { bootChannelKernel, type ChannelKernel } from '../channel-harness.js';

export interface ChatAHarness extends ChannelKernel {
  tg: FakeTelegram;
}

export async function bootChatA(
  o: { config?: Record<string, unknown>; token?: string; runAgent?: boolean; plugins?: string[] } = {},
): Promise<ChatAHarness> {
  const tg = await startFakeTelegram();
  const h = await bootChannelKernel({
    channel: 'chatA',
    config: {
      chatAToken: o.token ?? tg.token,
      chatAApiRoot: tg.apiRoot,
      chatAPollTimeout: 1,
      chatAAutoReplyEnabled: true,
      adminUsers: { chatA: ['42'] },
      ...o.config,
    },
    runAgent: o.runAgent,
    plugins: o.plugins,
    closeFake: () => tg.close(),
  });
  return Object.assign(h, { tg });
}
