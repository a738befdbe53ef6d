/**
 * The gateway chat: a chat channel on the gateway's port for browser pages and scripts (docs/gateway-chat.md).
 */
import type { PluginManifest } from '../../sdk/index.js';

const manifest = {
  id: 'gateway-chat',
  version: '1.0.0',
  kind: 'channel',
  description:
    'Chat with the agent over the gateway: POST /api/chat and the WebSocket action `chat`, with a conversation id; replies, progress and errors come back as WebSocket events.',
  // gateway:routes:gateway-chat: its REST routes and WebSocket action, which the gateway serves (sdk/gateway.ts).
  provides: ['channel:gateway-chat', 'gateway:routes:gateway-chat'],
  channel: { name: 'gateway-chat', userIdPattern: '^[A-Za-z0-9_.:-]{1,64}$', userIdExample: 'operator' },
  permissions: {},
} as const satisfies PluginManifest;

export default manifest;
