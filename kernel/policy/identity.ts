/**
 * Identities are "<channel>:<user_id>" strings, the form `identityLinks` uses.
 *
 * A link "a -> b" says a and b are the same person. Reading it in both directions means an
 * operator need not write every link twice. For admin rights only direct links count (a chain
 * a -> b -> c does not make a admin because c is): each grant is one line the operator can read.
 * Session keys do follow chains, so everyone in a chain shares one session.
 */
import type { ConfigView } from '../../sdk/types.js';

/** "<channel>:<user_id>". Email addresses compare case-insensitively, as mail systems treat them. */
export function identityOf(channel: string, userId: string): string {
  return `${channel}:${channel === 'email' ? userId.toLowerCase() : userId}`;
}

/** Split at the first colon: channel names have none, user ids may (chatB device JIDs do). */
export function parseIdentity(identity: string): { channel: string; userId: string } | undefined {
  const at = identity.indexOf(':');
  if (at <= 0 || at === identity.length - 1) return undefined;
  return { channel: identity.slice(0, at), userId: identity.slice(at + 1) };
}

function normalise(identity: string): string | undefined {
  const p = parseIdentity(identity);
  return p ? identityOf(p.channel, p.userId) : undefined;
}

/** The `identityLinks` map with every entry normalised; anything malformed is dropped. */
export function readLinks(config: ConfigView): Map<string, string> {
  const raw = config.get<unknown>('identityLinks');
  const links = new Map<string, string>();
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return links;
  for (const [from, to] of Object.entries(raw as Record<string, unknown>)) {
    if (typeof to !== 'string') continue;
    const a = normalise(from);
    const b = normalise(to);
    if (a && b && a !== b) links.set(a, b);
  }
  return links;
}

/** Identities directly linked to `identity`, in either direction (not including itself). */
export function directLinks(identity: string, links: Map<string, string>): string[] {
  const out = new Set<string>();
  const forward = links.get(identity);
  if (forward) out.add(forward);
  for (const [from, to] of links) if (to === identity) out.add(from);
  out.delete(identity);
  return [...out];
}

/**
 * One name for everyone connected to `identity` through links (any direction, any length):
 * the alphabetically first identity of the group, so every member computes the same key
 * whichever way the operator wrote the links.
 */
export function canonicalIdentity(identity: string, links: Map<string, string>): string {
  if (links.size === 0) return identity;
  const seen = new Set<string>([identity]);
  const todo = [identity];
  while (todo.length > 0 && seen.size < 1000) {
    const cur = todo.pop() as string;
    for (const next of directLinks(cur, links)) {
      if (!seen.has(next)) {
        seen.add(next);
        todo.push(next);
      }
    }
  }
  return [...seen].sort()[0] as string;
}
