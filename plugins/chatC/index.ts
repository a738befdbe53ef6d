/**
 * chatC plugin entry: while the channel is not configured it offers a stopped channel and skills that say which key
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

const notConfigured = () => new Error('chatC is not configured: set chatCToken (environment CHATC_TOKEN) to a Discord bot token.');

export default definePlugin({
  manifest,
  async setup(ctx) {
    const token = get<string>(ctx, 'chatCToken', '');
    if (!token) {
      ctx.provide('channel:chatC', {
        name: 'chatC',
        status: () => ({ enabled: false, connected: false, state: 'stopped' }),
        send: async () => Promise.reject(notConfigured()),
        reply: async () => Promise.reject(notConfigured()),
      } satisfies ChannelCapability);
      ctx.skills.register('send_chatC', () => Promise.reject(notConfigured()));
      return;
    }
    const { startChatC } = await import('./src/live.js');
    return startChatC(ctx);
  },
});
