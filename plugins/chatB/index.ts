/**
 * chatB plugin entry: while the channel is off it offers a stopped channel and skills that say which key to set,
 * without loading baileys (tens of MB); on, it loads src/live.ts, the WhatsApp adapter the kit's `defineChannel` runs.
 */
import { defineChannel } from '../../sdk/channel-kit/define.js';
import { setting } from '../../sdk/index.js';
import manifest from './manifest.js';
import type { WaIn } from './src/inbound.js';
import type { WaChunk } from './src/whatsapp.js';

export default defineChannel<typeof manifest, WaIn, WaChunk>({
  manifest,
  name: 'chatB',
  notConfigured: (ctx) =>
    setting<boolean>(ctx, 'chatBEnabled', false) === true
      ? undefined
      : 'chatB is not enabled: set chatBEnabled to true (environment CHATB_ENABLED=true), start Keel and scan the QR code it shows with WhatsApp → Linked devices.',
  skills: ['send_chatB'],
  adapter: async (kit, ctx) => (await import('./src/live.js')).whatsapp(kit, ctx),
});
