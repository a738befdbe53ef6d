/**
 * chatA plugin entry: while the channel is not configured it offers a stopped channel and skills that say which key
 * to set, without loading the platform library (tens of MB each); configured, it loads src/live.ts.
 */
import { definePlugin, offerUnconfigured, setting } from '../../sdk/index.js';
import manifest from './manifest.js';

const notConfigured = 'chatA is not configured: set chatAToken (environment CHATA_TOKEN) to a bot token from @BotFather.';

export default definePlugin({
  manifest,
  async setup(ctx) {
    const token = setting(ctx, 'chatAToken', '');
    if (!token)
      return offerUnconfigured(ctx, 'chatA', notConfigured, [
        'send_chatA',
        'chatA_send_buttons',
        'chatA_send_poll',
        'chatA_edit_message',
        'chatA_react',
        'chatA_pin_message',
      ]);
    const { startChatA } = await import('./src/live.js');
    return startChatA(ctx);
  },
});
