/**
 * chatC plugin entry: while the channel is not configured it offers a stopped channel and skills that say which key
 * to set, without loading the platform library (tens of MB each); configured, it loads src/live.ts.
 */
import { definePlugin, offerUnconfigured, setting } from '../../sdk/index.js';
import manifest from './manifest.js';

const notConfigured = 'chatC is not configured: set chatCToken (environment CHATC_TOKEN) to a Discord bot token.';

export default definePlugin({
  manifest,
  async setup(ctx) {
    const token = setting(ctx, 'chatCToken', '');
    if (!token) return offerUnconfigured(ctx, 'chatC', notConfigured, ['send_chatC']);
    const { startChatC } = await import('./src/live.js');
    return startChatC(ctx);
  },
});
