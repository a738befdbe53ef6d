/**
 * chatD plugin entry: while the channel is not configured it offers a stopped channel and skills that say which key
 * to set, without loading the platform library (tens of MB each); configured, it loads src/live.ts.
 */
import { type ChannelCapability, definePlugin, type PluginContext } from '../../sdk/index.js';
import manifest from './manifest.js';

function get<T>(ctx: PluginContext, key: string, fallback: T): T {
  try {
    const v = ctx.config.get<T>(key);
    return v === undefined || v === null ? fallback : v;
  } catch {
    return fallback;
  }
}

const notConfigured = () =>
  new Error(
    'chatD is not configured: set chatDBotToken (CHATD_BOT_TOKEN, xoxb-...) and chatDAppToken (CHATD_APP_TOKEN, xapp-... with connections:write).',
  );

export default definePlugin({
  manifest,
  async setup(ctx) {
    const botToken = get<string>(ctx, 'chatDBotToken', '');
    const appToken = get<string>(ctx, 'chatDAppToken', '');
    if (!botToken || !appToken) {
      const off: ChannelCapability = {
        name: 'chatD',
        status: () => ({ enabled: false, connected: false, state: 'stopped' }),
        send: async () => Promise.reject(notConfigured()),
        reply: async () => Promise.reject(notConfigured()),
      };
      ctx.provide('channel:chatD', off);
      ctx.skills.register('send_chatD', () => Promise.reject(notConfigured()));
      return;
    }
    const { startChatD } = await import('./src/live.js');
    return startChatD(ctx);
  },
});
