/**
 * Email plugin entry: the email channel on the kit's `defineChannel`. Its adapter (src/live.ts) receives over IMAP
 * IDLE into `receive()` (while `emailEnabled`), sends and replies over SMTP through the kit's runtime, and brings the
 * email skills. It always starts: sending needs only the SMTP keys, and the skills say which key is missing.
 * imapflow, nodemailer and mailparser load on first use. See docs/email.md.
 */
import { defineChannel } from '../../sdk/channel-kit/define.js';
import manifest from './manifest.js';
import type { InboundPayload } from './src/inbound.js';
import type { PreparedMail } from './src/sender.js';

export default defineChannel<typeof manifest, InboundPayload, PreparedMail>({
  manifest,
  name: 'email',
  adapter: async (kit, ctx) => (await import('./src/live.js')).email(kit, ctx),
});
