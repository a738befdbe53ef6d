/**
 * A tap on an Approve / Refuse button of an approval request on Discord (docs/approvals.md). The interaction
 * (MESSAGE_COMPONENT, its `custom_id` `apr:y|n:<id>`) is recorded in the ingress and acknowledged at once with a
 * deferred update (callback type 6: Discord's 3 seconds are met even when the approved command runs for minutes);
 * then the approvals service decides it (only an admin of chatC counts, once; sdk/approvals.ts decideTap). Once the
 * request is no longer pending the message is edited to the outcome with its buttons removed (`PATCH
 * /webhooks/:app/:token/messages/@original`, which for a button is the message it sits on); anyone else, and a tap
 * that decided nothing, gets an ephemeral follow-up only they see (`POST /webhooks/:app/:token`, flag 64).
 */
import type { REST } from 'discord.js';
import { approvalOutcomeText, decideTap } from '../../../sdk/approvals.js';
import { errorMessage, parseApprovalButton, type PluginContext } from '../../../sdk/index.js';
import type { DcInteraction } from './inbound.js';
import type { SlashAnswers } from './slash.js';

const EPHEMERAL = 1 << 6;

export function isApprovalTap(i: DcInteraction): boolean {
  return i.type === 3 && parseApprovalButton(i.data?.custom_id) !== undefined;
}

export async function approvalTap(
  ctx: Pick<PluginContext, 'use' | 'log'>,
  rest: REST,
  slash: SlashAnswers,
  i: DcInteraction,
  applicationId: string | undefined,
): Promise<string> {
  const tap = parseApprovalButton(i.data?.custom_id);
  const userId = (i.member?.user ?? i.user)?.id;
  if (!tap || !userId) return 'skipped';
  // Decided even when the acknowledgement failed (Keel was down for more than 3 s): the admin's tap still counts.
  const acked = await slash.acknowledged(i);
  const { out, edit } = await decideTap(ctx, 'chatC', userId, tap);
  const app = i.application_id ?? applicationId;
  if (!acked || !app) return `approval-${out.status}`;
  const hook = `/webhooks/${app}/${i.token}` as const;
  if (edit) {
    await rest
      .patch(`${hook}/messages/@original`, {
        body: { content: approvalOutcomeText(out.request!).slice(0, 2000), components: [], allowed_mentions: { parse: [] } },
        auth: false,
      })
      .catch((e) => ctx.log.warn(`approvals: could not edit the request message: ${errorMessage(e)}`));
  }
  if (out.status !== 'decided') {
    await rest
      .post(hook, { body: { content: out.message.slice(0, 2000), flags: EPHEMERAL, allowed_mentions: { parse: [] } }, auth: false })
      .catch((e) => ctx.log.warn(`approvals: could not answer the tap on ${tap.id}: ${errorMessage(e)}`));
  }
  return `approval-${out.status}`;
}
