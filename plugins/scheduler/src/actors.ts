/**
 * Who is behind an actor, for scheduling: whose task it is and what it runs as. Whether they are an admin is the
 * kernel's decision (capability `kernel:policy`).
 */
import { isUntrusted, principalOf, type Actor, type PluginContext } from '../../../sdk/index.js';

/**
 * The actor a scheduled task runs as: the person behind the call (so their rights carry, and no more), still
 * marked untrusted when any link was, so scheduling never launders untrusted content into trusted work.
 */
export function storedActor(actor: Actor): Actor {
  // A chain too long to follow has nobody behind it: the task runs as the agent on its own, untrusted.
  const p = principalOf(actor) ?? { kind: 'agent', channel: actor.channel };
  const out: Actor = { kind: p.kind, channel: p.channel };
  if (p.userId !== undefined) out.userId = p.userId;
  if (p.loopback !== undefined) out.loopback = p.loopback;
  if (isUntrusted(actor)) out.untrusted = true;
  return out;
}

/** A stable key for "the same person". */
export function identityKey(actor: Actor): string {
  const p = principalOf(actor);
  // Stored actors are always readable (storedActor), so an unreadable chain owns no schedule.
  if (!p) return 'unreadable-actor-chain';
  return `${p.kind}:${p.channel}:${p.userId ?? ''}`;
}

/** Admin is the kernel's decision (capability `kernel:policy`); without the capability nobody is (fail closed). */
export function isAdmin(ctx: Pick<PluginContext, 'use'>, actor: Actor | undefined): boolean {
  return ctx.use('kernel:policy')?.isAdmin(actor) === true;
}
