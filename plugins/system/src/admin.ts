/**
 * Who may confirm a command or approve a configuration change: a HUMAN admin.
 *
 * Whether that human is an admin is the kernel's decision (capability `kernel:policy`: adminUsers per channel,
 * identityLinks, failing closed); without the capability nobody may approve. On top of it, the rules of approval:
 * the agent acting on its own (no `onBehalfOf`) is never an approver, an agent counts only through the human it works
 * for, and work started by untrusted content (`untrusted` anywhere in the chain) cannot approve either.
 */
import type { Actor, PluginContext, PolicyCapability } from '../../../sdk/index.js';

/** The human behind the actor (following `onBehalfOf` through agents), or undefined for the agent on its own. */
export function humanBehind(actor: Actor | undefined): Actor | undefined {
  let who = actor;
  for (let d = 0; who?.kind === 'agent' && d < 5; d++) who = who.onBehalfOf;
  return who && who.kind !== 'agent' ? who : undefined;
}

function tainted(actor: Actor | undefined): boolean {
  let cur = actor;
  for (let d = 0; cur && d < 8; d++, cur = cur.onBehalfOf) if (cur.untrusted === true) return true;
  return cur !== undefined;
}

export type Approver = { ok: true; human: Actor } | { ok: false; reason: string };

/** May this actor confirm on a human's behalf? */
export function approverOf(actor: Actor, ctx: Pick<PluginContext, 'use'>): Approver {
  if (actor.kind === 'agent' && !actor.onBehalfOf) {
    return { ok: false, reason: 'the agent cannot approve on its own (self-approval): a human (the operator or a channel admin) must approve' };
  }
  const human = humanBehind(actor);
  if (!human) return { ok: false, reason: 'no human is behind this request, so it cannot approve' };
  if (tainted(actor)) return { ok: false, reason: 'this request was started by untrusted content, so it cannot approve' };
  if (ctx.use<PolicyCapability>('kernel:policy')?.isAdmin(human) !== true) return { ok: false, reason: `${describe(human)} is not an admin, so it cannot approve` };
  return { ok: true, human };
}

export function describe(a: Actor | undefined): string {
  if (!a) return 'nobody';
  if (a.kind === 'operator') return `the operator (${a.channel})`;
  if (a.kind === 'agent') return a.onBehalfOf ? `the agent for ${describe(a.onBehalfOf)}` : 'the agent on its own';
  return `user ${a.userId ?? '?'} on ${a.channel}`;
}
