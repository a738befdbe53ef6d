/**
 * chatC plugin entry: while the channel is not configured it offers a stopped channel and skills that say which key
 * to set, without loading the platform library (tens of MB each); configured, it loads src/live.ts, the Discord
 * adapter the kit's `defineChannel` runs.
 */
import { defineChannel } from '../../sdk/channel-kit/define.js';
import { setting } from '../../sdk/index.js';
import manifest from './manifest.js';
import type { DcChunk } from './src/discord.js';
import type { DcPayload } from './src/inbound.js';

export default defineChannel<typeof manifest, DcPayload, DcChunk>({
  manifest,
  name: 'chatC',
  notConfigured: (ctx) =>
    setting(ctx, 'chatCToken', '')
      ? undefined
      : 'chatC is not configured: set chatCToken (environment CHATC_TOKEN) to a Discord bot token.',
  skills: ['send_chatC'],
  adapter: async (kit, ctx) => (await import('./src/live.js')).discord(kit, ctx),
});
