/**
 * A tap on an Approve / Refuse button of an approval request on Slack (docs/approvals.md). The `block_actions`
 * interaction comes down Socket Mode as an `interactive` envelope, which is acknowledged once it is in the durable
 * ingress (socket.ts), well within Slack's 3 seconds; then the approvals service decides it (only an admin of
 * chatD counts, once; sdk/approvals.ts decideTap). Once the request is no longer pending its message is replaced
 * by the outcome without buttons (`chat.update` with `blocks: []`); anyone else, and a tap that decided nothing,
 * gets an ephemeral message only they see (`chat.postEphemeral`).
 */
import type { WebClient } from '@slack/web-api';
import type { Outbox } from '../../../sdk/channel-kit/index.js';
import { approvalOutcomeText, decideTap } from '../../../sdk/approvals.js';
import { errorMessage, parseApprovalButton, type PluginContext } from '../../../sdk/index.js';
import type { SlackItem } from './inbound.js';
import { slackEscape } from './slack.js';

export async function approvalTap(
  ctx: Pick<PluginContext, 'use' | 'log'>,
  client: WebClient,
  outbox: Pick<Outbox, 'edit'>,
  t: Extract<SlackItem, { kind: 'tap' }>,
): Promise<string> {
  const tap = parseApprovalButton(t.data);
  if (!tap) return 'skipped';
  const { out, edit } = await decideTap(ctx, 'chatD', t.user, tap);
  if (edit) {
    await outbox
      .edit(t.channel, () =>
        client.chat.update({ channel: t.channel, ts: t.ts, text: slackEscape(approvalOutcomeText(out.request!)), blocks: [] }),
      )
      .catch((e) => ctx.log.warn(`approvals: could not edit the request message: ${errorMessage(e)}`));
  }
  if (out.status !== 'decided') {
    await outbox
      .edit(t.channel, () =>
        client.chat.postEphemeral({
          channel: t.channel,
          user: t.user,
          text: slackEscape(out.message),
          ...(t.thread ? { thread_ts: t.thread } : {}),
        }),
      )
      .catch((e) => ctx.log.warn(`approvals: could not answer the tap on ${tap.id}: ${errorMessage(e)}`));
  }
  return `approval-${out.status}`;
}
