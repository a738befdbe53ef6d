/**
 * send_chatB of SPEC: a Markdown message to a WhatsApp chat by JID, rendered as WhatsApp formatting, cut to 4,096
 * characters per message, each part sent once (ledger key per call, message id per part).
 */
import { errorsFor } from '../../../sdk/errors.js';
import { skillSendKey } from '../../../sdk/channel-kit/index.js';
import type { OutboundMessage, PluginContext, SendOptions, SentMessage } from '../../../sdk/index.js';
import type manifest from '../manifest.js';
import { CHAT_JID } from './whatsapp.js';

const coded = errorsFor('chatB');

export interface SkillDeps {
  send(to: string, message: string | OutboundMessage, options?: SendOptions): Promise<SentMessage>;
}

export function registerSkills(ctx: PluginContext<typeof manifest>, d: SkillDeps): void {
  ctx.skills.register('send_chatB', async (args, call) => {
    const jid = String(args.jid ?? '').trim();
    if (!CHAT_JID.test(jid))
      throw coded(
        'KEEL_E_INVALID_ARGUMENT',
        `jid "${jid}" is not a WhatsApp chat: use <number>@s.whatsapp.net for a contact (the number with its country code, digits only, e.g. 4915123456789@s.whatsapp.net) or <id>@g.us for a group.`,
      );
    // The same call within one action is sent once, even when the action runs again after a crash.
    const key = skillSendKey(call.action, 'send_chatB', { jid, m: args.message });
    const sent = await d.send(jid, args.message, key ? { idempotencyKey: key } : {});
    return { jid, messageId: sent.messageId, messageIds: sent.messageIds };
  });
}
