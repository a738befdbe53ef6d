/**
 * A tap on an Approve / Refuse button of an approval request (docs/approvals.md): decided by the approvals service
 * (only an admin of chatA counts, once), answered with a toast (`answerCallbackQuery`), and the request's message is
 * edited to show the outcome without its buttons once it is no longer pending.
 */
import type { Api } from 'grammy';
import { type ApprovalDecision, type ApprovalRequest, type DecideOutcome, errorMessage, type PluginContext } from '../../../sdk/index.js';

export interface Tap {
  id: string;
  from: { id: number };
  message?: { message_id: number; chat: { id: number } };
}

/** The line that replaces the buttons. */
export function outcomeLine(r: ApprovalRequest): string {
  if (r.state === 'approved') return `Approved by ${r.decidedBy ?? 'an admin'}.`;
  if (r.state === 'refused') return `Refused by ${r.decidedBy ?? 'an admin'}.`;
  if (r.state === 'expired') return 'Expired: nobody answered in time.';
  return 'Waiting for an admin.';
}

export async function approvalTap(
  ctx: Pick<PluginContext, 'use' | 'log'>,
  api: Api,
  limited: (chatId: string, fn: () => Promise<unknown>) => Promise<unknown>,
  q: Tap,
  tap: { id: string; decision: ApprovalDecision },
): Promise<string> {
  const approvals = ctx.use('approvals');
  let out: DecideOutcome;
  try {
    out = approvals
      ? await approvals.decide(tap.id, tap.decision, { kind: 'user', channel: 'chatA', userId: String(q.from.id) })
      : { status: 'unknown', message: 'Approvals are not available here (the system plugin is not running).' };
  } catch (e) {
    ctx.log.warn(`approvals: the tap on ${tap.id} failed: ${errorMessage(e)}`);
    out = { status: 'unknown', message: `This could not be decided: ${errorMessage(e)}`.slice(0, 200) };
  }
  await api
    .answerCallbackQuery(q.id, { text: out.message.slice(0, 200), show_alert: out.status !== 'decided' })
    .catch((e) => ctx.log.warn(`approvals: answerCallbackQuery failed: ${errorMessage(e)}`));
  const r = out.request;
  if (r && r.state !== 'pending' && out.status !== 'not-admin' && q.message) {
    const chatId = String(q.message.chat.id);
    const text = `Approval ${r.id}: ${r.ask}\n${outcomeLine(r)}`;
    await limited(chatId, () => api.editMessageText(chatId, q.message!.message_id, text)).catch((e) =>
      ctx.log.warn(`approvals: could not edit the request message: ${errorMessage(e)}`),
    );
  }
  return `approval-${out.status}`;
}
