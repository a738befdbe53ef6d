/**
 * A real kernel with the agent, the chatD plugin (real Bolt, web-api, socket-mode) and the scripted fake provider,
 * talking to the loopback Slack Web API and Socket Mode WebSocket.
 */
import { startFakeSlack, type FakeSlack } from '../../fakes/slack-server.js';
import { bootChannelKernel, type ChannelKernel } from '../channel-harness.js';

export const ADMIN = 'U0ADMIN01';

export interface ChatDHarness extends ChannelKernel {
  slack: FakeSlack;
}

export async function bootChatD(
  o: { config?: Record<string, unknown>; runAgent?: boolean; plugins?: string[]; pingMs?: number } = {},
): Promise<ChatDHarness> {
  const slack = await startFakeSlack(o.pingMs !== undefined ? { pingMs: o.pingMs } : {});
  const h = await bootChannelKernel({
    channel: 'chatD',
    config: {
      chatDBotToken: slack.botToken,
      chatDAppToken: slack.appToken,
      chatDApiUrl: slack.apiUrl,
      chatDAutoReplyEnabled: true,
      adminUsers: { chatD: [ADMIN] },
      ...o.config,
    },
    runAgent: o.runAgent,
    plugins: o.plugins,
    closeFake: () => slack.close(),
  });
  return Object.assign(h, { slack });
}
