/**
 * Who is behind an actor, for scheduling: whose task it is and what it runs as. Whether they are an admin is the
 * kernel's decision (capability `kernel:policy`).
 */
import type { Actor, PluginContext, PolicyCapability } from '../../../sdk/index.js';

const MAX_DEPTH = 8;

/** The first non-agent in the `onBehalfOf` chain, or the last agent when nobody else is behind it. */
export function principalOf(actor: Actor): Actor {
  let cur: Actor = actor;
  for (let d = 0; cur.kind === 'agent' && cur.onBehalfOf && d < MAX_DEPTH; d++) cur = cur.onBehalfOf;
  return cur;
}

/** Any link of the chain marked untrusted. */
export function isUntrusted(actor: Actor): boolean {
  let cur: Actor | undefined = actor;
  for (let d = 0; cur && d < MAX_DEPTH; d++, cur = cur.onBehalfOf) if (cur.untrusted === true) return true;
  return cur !== undefined;
}

/**
 * The actor a scheduled task runs as: the person behind the call (so their rights carry, and no more), still
 * marked untrusted when any link was, so scheduling never launders untrusted content into trusted work.
 */
export function storedActor(actor: Actor): Actor {
  const p = principalOf(actor);
  const out: Actor = { kind: p.kind, channel: p.channel };
  if (p.userId !== undefined) out.userId = p.userId;
  if (p.loopback !== undefined) out.loopback = p.loopback;
  if (isUntrusted(actor)) out.untrusted = true;
  return out;
}

/** A stable key for "the same person". */
export function identityKey(actor: Actor): string {
  const p = principalOf(actor);
  return `${p.kind}:${p.channel}:${p.userId ?? ''}`;
}

/** The agent acting on its own in autonomy mode: nobody behind it, or the autonomy channel anywhere in the chain. */
export function isAutonomyActor(actor: Actor): boolean {
  let cur: Actor | undefined = actor;
  for (let d = 0; cur && d < MAX_DEPTH; d++, cur = cur.onBehalfOf) if (cur.channel === 'autonomy') return true;
  return principalOf(actor).kind === 'agent';
}

/** Admin is the kernel's decision (capability `kernel:policy`); without the capability nobody is (fail closed). */
export function isAdmin(ctx: Pick<PluginContext, 'use'>, actor: Actor | undefined): boolean {
  return ctx.use<PolicyCapability>('kernel:policy')?.isAdmin(actor) === true;
}
