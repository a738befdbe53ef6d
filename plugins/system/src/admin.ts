/**
 * Who may confirm a command or approve a configuration change: a HUMAN admin.
 *
 * Whether that human is an admin is the kernel's decision (capability `kernel:policy`: adminUsers per channel,
 * identityLinks, failing closed); without the capability nobody may approve. On top of it, the rules of approval:
 * the agent acting on its own (no `onBehalfOf`) is never an approver, an agent counts only through the human it works
 * for, and work started by untrusted content (`untrusted` anywhere in the chain) cannot approve either.
 */
import { describeActor, humanBehind, isUntrusted, type Actor, type PluginContext } from '../../../sdk/index.js';

export type Approver = { ok: true; human: Actor } | { ok: false; reason: string };

/** May this actor confirm on a human's behalf? */
export function approverOf(actor: Actor, ctx: Pick<PluginContext, 'use'>): Approver {
  if (actor.kind === 'agent' && !actor.onBehalfOf) {
    return {
      ok: false,
      reason: 'the agent cannot approve on its own (self-approval): a human (the operator or a channel admin) must approve',
    };
  }
  const human = humanBehind(actor);
  if (!human) return { ok: false, reason: 'no human is behind this request, so it cannot approve' };
  if (isUntrusted(actor)) return { ok: false, reason: 'this request was started by untrusted content, so it cannot approve' };
  if (ctx.use('kernel:policy')?.isAdmin(human) !== true)
    return { ok: false, reason: `${describeActor(human)} is not an admin, so it cannot approve` };
  return { ok: true, human };
}
