/**
 * A real kernel with the agent, the chatC plugin and the scripted fake provider, talking to the loopback Discord.
 */
import { startFakeDiscord, type FakeDiscord } from '../../fakes/discord-server.js';
import { bootChannelKernel, type ChannelKernel } from '../channel-harness.js';

export const ADMIN = '420000000000000042';
export const USER = '430000000000000043';

export interface ChatCHarness extends ChannelKernel {
  dc: FakeDiscord;
}

export async function bootChatC(
  o: { config?: Record<string, unknown>; token?: string; runAgent?: boolean; plugins?: string[]; heartbeatMs?: number } = {},
): Promise<ChatCHarness> {
  const dc = await startFakeDiscord({ heartbeatMs: o.heartbeatMs ?? 400 });
  const h = await bootChannelKernel({
    channel: 'chatC',
    config: {
      chatCToken: o.token ?? dc.token,
      chatCApiUrl: dc.apiUrl,
      chatCAutoReplyEnabled: true,
      adminUsers: { chatC: [ADMIN] },
      ...o.config,
    },
    runAgent: o.runAgent,
    plugins: o.plugins,
    closeFake: () => dc.close(),
  });
  return Object.assign(h, { dc });
}
