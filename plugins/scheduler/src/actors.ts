/**
 * Who is behind an actor, and whether they are an admin, from what a plugin can see (SDK types and config).
 * The kernel's own check (kernel/policy) is the authority at dispatch; this mirrors its rules, failing closed.
 */
import type { Actor, ConfigView } from '../../../sdk/index.js';

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

const ADMIN_CHANNELS = new Set(['chatA', 'chatB', 'chatC', 'chatD', 'email']);

/** Admin per SPEC: the operator; a user listed in adminUsers[channel] (directly or via identityLinks); an agent only through its principal. */
export function isAdmin(actor: Actor | undefined, config: ConfigView): boolean {
  try {
    if (!actor) return false;
    const p = principalOf(actor);
    if (p.kind === 'operator') return true;
    if (p.kind !== 'user' || typeof p.userId !== 'string' || p.userId.trim() === '') return false;
    const admins = config.get<unknown>('adminUsers');
    if (!admins || typeof admins !== 'object' || Array.isArray(admins)) return false;
    const me = `${p.channel}:${p.userId.trim()}`;
    const identities = [me];
    const links = config.get<unknown>('identityLinks');
    if (links && typeof links === 'object' && !Array.isArray(links)) {
      for (const [a, b] of Object.entries(links as Record<string, unknown>)) {
        if (typeof b !== 'string') continue;
        if (a === me) identities.push(b);
        if (b === me) identities.push(a);
      }
    }
    return identities.some((id) => {
      const i = id.indexOf(':');
      if (i <= 0) return false;
      const ch = id.slice(0, i);
      const uid = id.slice(i + 1);
      const list = (admins as Record<string, unknown>)[ch];
      return ADMIN_CHANNELS.has(ch) && Array.isArray(list) && list.some((x) => typeof x === 'string' && x.trim() === uid);
    });
  } catch {
    return false;
  }
}
