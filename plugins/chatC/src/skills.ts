/**
 * send_chatC of SPEC: a Markdown message to a Discord channel by id (17 to 20 digits), rendered as Discord
 * Markdown, cut to 2,000 characters per message, each part sent once (ledger key per call, nonce per part).
 */
import { errorsFor } from '../../../sdk/errors.js';
import { skillSendKey } from '../../../sdk/channel-kit/index.js';
import type { OutboundMessage, PluginContext, SendOptions, SentMessage } from '../../../sdk/index.js';
import type manifest from '../manifest.js';
import { SNOWFLAKE } from './discord.js';

const coded = errorsFor('chatC');

export interface SkillDeps {
  send(to: string, message: string | OutboundMessage, options?: SendOptions): Promise<SentMessage>;
}

export function registerSkills(ctx: PluginContext<typeof manifest>, d: SkillDeps): void {
  ctx.skills.register('send_chatC', async (args, call) => {
    const channel = String(args.channel_id ?? '').trim();
    if (!SNOWFLAKE.test(channel))
      throw coded(
        'KEEL_E_INVALID_ARGUMENT',
        `channel_id "${channel}" is not a Discord channel id: it must be 17 to 20 digits (in Discord, enable Developer Mode and use "Copy Channel ID").`,
      );
    // The same call within one action is sent once, even when the action runs again after a crash.
    const key = skillSendKey(call.action, 'send_chatC', { channel, m: args.message });
    const sent = await d.send(channel, args.message, key ? { idempotencyKey: key } : {});
    return { channel_id: channel, messageId: sent.messageId, messageIds: sent.messageIds };
  });
}
