/**
 * Gateway chat plugin: a channel (`channel:gateway-chat`) whose inbound messages arrive over the gateway (REST and
 * WebSocket) and whose replies, progress and errors go out as events on the gateway's WebSocket stream
 * (`gateway:events`). It is the kit's `defineChannel` with src/chat.ts as its adapter. See docs/gateway-chat.md.
 */
import { defineChannel } from '../../sdk/channel-kit/define.js';
import { definePlugin, gatewayServesHere } from '../../sdk/index.js';
import manifest from './manifest.js';
import type { ChatChunk, ChatPayload } from './src/chat.js';

const channel = defineChannel<typeof manifest, ChatPayload, ChatChunk>({
  manifest,
  adapter: async (kit, ctx) => (await import('./src/chat.js')).gatewayChat(kit, ctx),
});

export default definePlugin({
  manifest,
  // Replies travel on the gateway's WebSocket of this process: without a gateway serving here (`keel run` alone,
  // or the gateway in another process) the channel would accept messages it can never answer, so it is not there
  // at all (no stopped channel offered either: no action waits for it here).
  setup: (ctx) => (gatewayServesHere(ctx) ? channel.setup(ctx) : {}),
});
