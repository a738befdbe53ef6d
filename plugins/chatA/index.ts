/**
 * chatA plugin entry: while the channel is not configured it offers a stopped channel and skills that say which key
 * to set, without loading the platform library (tens of MB each); configured, it loads src/live.ts, the Telegram
 * adapter the kit's `defineChannel` runs.
 */
import { defineChannel } from '../../sdk/channel-kit/define.js';
import { setting } from '../../sdk/index.js';
import manifest from './manifest.js';
import type { TgUpdate } from './src/inbound.js';
import type { TgChunk } from './src/telegram.js';

export default defineChannel<typeof manifest, TgUpdate, TgChunk>({
  manifest,
  name: 'chatA',
  notConfigured: (ctx) =>
    setting(ctx, 'chatAToken', '')
      ? undefined
      : 'chatA is not configured: set chatAToken (environment CHATA_TOKEN) to a bot token from @BotFather.',
  skills: ['send_chatA', 'chatA_send_buttons', 'chatA_send_poll', 'chatA_edit_message', 'chatA_react', 'chatA_pin_message'],
  adapter: async (kit, ctx) => (await import('./src/live.js')).telegram(kit, ctx),
});
