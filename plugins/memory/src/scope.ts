/**
 * Who may see what. Plugins cannot import the kernel, so the two small rules memory needs are re-derived here
 * from configuration, the same way the kernel decides them (kernel/policy/is-admin.ts, session-key.ts):
 *
 * - admin: the operator always; a user when `adminUsers[<channel>]` lists them or an identity directly linked
 *   to theirs (identityLinks, either direction) on its own channel; an agent only through `onBehalfOf`.
 *   Anything missing or malformed answers "not admin" (fail closed).
 * - session: `sessionScope` main -> 'main'; per-peer -> the alphabetically first identity of the linked group;
 *   per-channel-peer (default, and for anything unexpected) -> '<channel>:<userId>'. The operator's session is
 *   'operator', the agent on its own 'agent'.
 */
import type { Actor, ConfigView } from '../../../sdk/index.js';

const ADMIN_CHANNELS = new Set(['chatA', 'chatB', 'chatC', 'chatD', 'email']);

export function identityOf(channel: string, userId: string): string {
  return `${channel}:${channel === 'email' ? userId.toLowerCase() : userId}`;
}

function parseIdentity(identity: string): { channel: string; userId: string } | undefined {
  const at = identity.indexOf(':');
  if (at <= 0 || at === identity.length - 1) return undefined;
  return { channel: identity.slice(0, at), userId: identity.slice(at + 1) };
}

function safeGet(config: ConfigView, key: string): unknown {
  try {
    return config.get(key);
  } catch {
    return undefined;
  }
}

function readLinks(config: ConfigView): Map<string, string> {
  const raw = safeGet(config, 'identityLinks');
  const links = new Map<string, string>();
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return links;
  for (const [from, to] of Object.entries(raw as Record<string, unknown>)) {
    if (typeof to !== 'string') continue;
    const a = parseIdentity(from);
    const b = parseIdentity(to);
    if (!a || !b) continue;
    const ia = identityOf(a.channel, a.userId);
    const ib = identityOf(b.channel, b.userId);
    if (ia !== ib) links.set(ia, ib);
  }
  return links;
}

function directLinks(identity: string, links: Map<string, string>): string[] {
  const out = new Set<string>();
  const fwd = links.get(identity);
  if (fwd) out.add(fwd);
  for (const [from, to] of links) if (to === identity) out.add(from);
  out.delete(identity);
  return [...out];
}

function canonical(identity: string, links: Map<string, string>): string {
  if (links.size === 0) return identity;
  const seen = new Set([identity]);
  const todo = [identity];
  while (todo.length > 0 && seen.size < 1000) {
    for (const next of directLinks(todo.pop()!, links)) if (!seen.has(next)) (seen.add(next), todo.push(next));
  }
  return [...seen].sort()[0]!;
}

/** The person an actor works for: follows `onBehalfOf` through agents (bounded). */
export function principal(actor: Actor | undefined): Actor | undefined {
  let who = actor;
  for (let d = 0; who?.kind === 'agent' && d < 5; d++) who = who.onBehalfOf;
  return who;
}

export function isAdmin(actor: Actor | undefined, config: ConfigView): boolean {
  try {
    const who = principal(actor);
    if (!who || who.kind === 'agent') return false;
    if (who.kind === 'operator') return true;
    if (who.kind !== 'user' || typeof who.channel !== 'string' || typeof who.userId !== 'string' || !who.userId.trim()) return false;
    const admins = safeGet(config, 'adminUsers');
    if (admins === null || typeof admins !== 'object' || Array.isArray(admins)) return false;
    const listed = (identity: string): boolean => {
      const p = parseIdentity(identity);
      if (!p || !ADMIN_CHANNELS.has(p.channel) || !Object.hasOwn(admins, p.channel)) return false;
      const list = (admins as Record<string, unknown>)[p.channel];
      return Array.isArray(list) && list.some((id) => typeof id === 'string' && id.trim() !== '' && identityOf(p.channel, id.trim()) === identity);
    };
    const me = identityOf(who.channel, who.userId);
    return listed(me) || directLinks(me, readLinks(config)).some(listed);
  } catch {
    return false;
  }
}

export function sessionKey(actor: Actor | undefined, config: ConfigView): string {
  const scope = safeGet(config, 'sessionScope');
  if (scope === 'main') return 'main';
  const who = principal(actor);
  if (!who) return 'operator'; // no actor: the local operator's own calls (CLI, tests of the capability)
  if (who.kind === 'agent') return 'agent';
  if (who.kind === 'operator') return 'operator';
  const channel = typeof who.channel === 'string' && who.channel !== '' ? who.channel : 'unknown';
  const userId = typeof who.userId === 'string' && who.userId !== '' ? who.userId : 'anonymous';
  const me = identityOf(channel, userId);
  if (scope === 'per-peer') {
    try {
      return canonical(me, readLinks(config));
    } catch {
      return me;
    }
  }
  return me;
}

/** The channel an actor speaks on (its principal's). */
export function channelOf(actor: Actor | undefined): string {
  return principal(actor)?.channel ?? 'cli';
}
