/**
 * Who may see what. Whether an actor is an admin and which session their work belongs to are the kernel's
 * decisions (capability `kernel:policy`, the rules dispatch uses); this file only adds what memory needs on top:
 * whose memory it is (`principal`, `channelOf`).
 */
import { errorsFor } from '../../../sdk/errors.js';
import { principalOf, type Actor, type PluginContext } from '../../../sdk/index.js';

const coded = errorsFor('memory');

type Uses = Pick<PluginContext, 'use'>;

/** The local operator, for calls that name no actor (the CLI, the capability used directly). */
const LOCAL_OPERATOR: Actor = { kind: 'operator', channel: 'cli' };

/** The person an actor works for (the agent itself when it works for nobody); see sdk/actor.ts. */
export const principal = principalOf;

/** The kernel's admin decision; without `kernel:policy` nobody is an admin (fail closed). */
export function isAdmin(ctx: Uses, actor: Actor | undefined): boolean {
  return ctx.use('kernel:policy')?.isAdmin(actor) === true;
}

/** The kernel's session key; no actor is the local operator. Without `kernel:policy` memory cannot scope, so it refuses. */
export function sessionKey(ctx: Uses, actor: Actor | undefined): string {
  const policy = ctx.use('kernel:policy');
  if (!policy) throw coded('KEEL_E_PLUGIN_FAILED', 'the kernel did not provide kernel:policy, so memory cannot tell whose session this is');
  return policy.sessionKey(actor ?? LOCAL_OPERATOR);
}

/** The channel an actor speaks on (its principal's). */
export function channelOf(actor: Actor | undefined): string {
  return principal(actor)?.channel ?? 'cli';
}
