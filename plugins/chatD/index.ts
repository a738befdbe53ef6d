/**
 * chatD plugin entry: while the channel is not configured it offers a stopped channel and skills that say which key
 * to set, without loading the platform library (tens of MB each); configured, it loads src/live.ts.
 */
import { definePlugin, offerUnconfigured, setting } from '../../sdk/index.js';
import manifest from './manifest.js';

const notConfigured =
  'chatD is not configured: set chatDBotToken (CHATD_BOT_TOKEN, xoxb-...) and chatDAppToken (CHATD_APP_TOKEN, xapp-... with connections:write).';

export default definePlugin({
  manifest,
  async setup(ctx) {
    const botToken = setting(ctx, 'chatDBotToken', '');
    const appToken = setting(ctx, 'chatDAppToken', '');
    if (!botToken || !appToken) return offerUnconfigured(ctx, 'chatD', notConfigured, ['send_chatD']);
    const { startChatD } = await import('./src/live.js');
    return startChatD(ctx);
  },
});
