/**
 * A tap on an Approve / Refuse button of an approval request (docs/approvals.md): decided by the approvals service
 * (only an admin of chatA counts, once; sdk/approvals.ts decideTap), answered with a toast (`answerCallbackQuery`),
 * and the request's message is edited to show the outcome without its buttons once it is no longer pending.
 */
import type { Api } from 'grammy';
import { approvalOutcomeText, decideTap } from '../../../sdk/approvals.js';
import { type ApprovalDecision, errorMessage, type PluginContext } from '../../../sdk/index.js';

export interface Tap {
  id: string;
  from: { id: number };
  message?: { message_id: number; chat: { id: number } };
}

export async function approvalTap(
  ctx: Pick<PluginContext, 'use' | 'log'>,
  api: Api,
  limited: (chatId: string, fn: () => Promise<unknown>) => Promise<unknown>,
  q: Tap,
  tap: { id: string; decision: ApprovalDecision },
): Promise<string> {
  const { out, edit } = await decideTap(ctx, 'chatA', String(q.from.id), tap);
  await api
    .answerCallbackQuery(q.id, { text: out.message.slice(0, 200), show_alert: out.status !== 'decided' })
    .catch((e) => ctx.log.warn(`approvals: answerCallbackQuery failed: ${errorMessage(e)}`));
  if (edit && q.message) {
    const chatId = String(q.message.chat.id);
    await limited(chatId, () => api.editMessageText(chatId, q.message!.message_id, approvalOutcomeText(out.request!))).catch((e) =>
      ctx.log.warn(`approvals: could not edit the request message: ${errorMessage(e)}`),
    );
  }
  return `approval-${out.status}`;
}
