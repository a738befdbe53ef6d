/**
 * chatD plugin entry: while the channel is not configured it offers a stopped channel and skills that say which key
 * to set, without loading the platform library (tens of MB each); configured, it loads src/live.ts, the Slack
 * adapter the kit's `defineChannel` runs.
 */
import { defineChannel } from '../../sdk/channel-kit/define.js';
import { setting } from '../../sdk/index.js';
import manifest from './manifest.js';
import type { SlackItem } from './src/inbound.js';
import type { SlackChunk } from './src/slack.js';

export default defineChannel<typeof manifest, SlackItem, SlackChunk>({
  manifest,
  name: 'chatD',
  notConfigured: (ctx) =>
    setting(ctx, 'chatDBotToken', '') && setting(ctx, 'chatDAppToken', '')
      ? undefined
      : 'chatD is not configured: set chatDBotToken (CHATD_BOT_TOKEN, xoxb-...) and chatDAppToken (CHATD_APP_TOKEN, xapp-... with connections:write).',
  skills: ['send_chatD'],
  adapter: async (kit, ctx) => (await import('./src/live.js')).slack(kit, ctx),
});
