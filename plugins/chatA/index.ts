/**
 * chatA plugin entry: while the channel is not configured it offers a stopped channel and skills that say which key
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

const notConfigured = () => new Error('chatA is not configured: set chatAToken (environment CHATA_TOKEN) to a bot token from @BotFather.');

export default definePlugin({
  manifest,
  async setup(ctx) {
    const token = get<string>(ctx, 'chatAToken', '');
    if (!token) {
      const off: ChannelCapability = {
        name: 'chatA',
        status: () => ({ enabled: false, connected: false, state: 'stopped' }),
        send: async () => Promise.reject(notConfigured()),
        reply: async () => Promise.reject(notConfigured()),
      };
      ctx.provide('channel:chatA', off);
      ctx.skills.register('send_chatA', () => Promise.reject(notConfigured()));
      for (const s of ['chatA_send_buttons', 'chatA_send_poll', 'chatA_edit_message', 'chatA_react', 'chatA_pin_message'] as const)
        ctx.skills.register(s, () => Promise.reject(notConfigured()));
      return;
    }
    const { startChatA } = await import('./src/live.js');
    return startChatA(ctx);
  },
});
