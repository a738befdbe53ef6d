/**
 * chatB plugin entry: while the channel is off it offers a stopped channel and skills that say which key to set,
 * without loading baileys (tens of MB); on, it loads src/live.ts.
 */
import { definePlugin, offerUnconfigured, setting } from '../../sdk/index.js';
import manifest from './manifest.js';

const notConfigured =
  'chatB is not enabled: set chatBEnabled to true (environment CHATB_ENABLED=true), start Keel and scan the QR code it shows with WhatsApp → Linked devices.';

export default definePlugin({
  manifest,
  async setup(ctx) {
    if (setting<boolean>(ctx, 'chatBEnabled', false) !== true) return offerUnconfigured(ctx, 'chatB', notConfigured, ['send_chatB']);
    const { startChatB } = await import('./src/live.js');
    return startChatB(ctx);
  },
});
