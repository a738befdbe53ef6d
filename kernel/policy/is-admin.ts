/**
 * Is this actor an admin? Fails closed: anything missing, malformed or surprising answers "no".
 *
 * - operator (CLI, authenticated gateway): always.
 * - user: only when `adminUsers[<their channel>]` lists their id, or an identity directly linked
 *   to theirs (identityLinks, either direction) is listed on its own channel.
 * - agent: only through the person it works for (`onBehalfOf`); on its own, never.
 */
import type { Actor, ConfigView } from '../../sdk/types.js';
import { directLinks, identityOf, parseIdentity, readLinks } from './identity.js';

/** Deep enough for agent -> sub-agent -> person; deeper chains (or cycles) are refused. */
const MAX_DELEGATION_DEPTH = 4;

export function isAdmin(actor: Actor | undefined, config: ConfigView): boolean {
  try {
    return check(actor, config, 0);
  } catch {
    return false;
  }
}

function check(actor: Actor | undefined, config: ConfigView, depth: number): boolean {
  if (!actor || typeof actor !== 'object' || depth > MAX_DELEGATION_DEPTH) return false;
  switch (actor.kind) {
    case 'operator':
      return true;
    case 'agent':
      return actor.onBehalfOf !== undefined && check(actor.onBehalfOf, config, depth + 1);
    case 'user':
      return isAdminUser(actor, config);
    default:
      return false;
  }
}

function isAdminUser(actor: Actor, config: ConfigView): boolean {
  if (typeof actor.channel !== 'string' || typeof actor.userId !== 'string' || actor.userId.trim() === '') return false;
  const admins = config.get<unknown>('adminUsers');
  if (admins === null || typeof admins !== 'object' || Array.isArray(admins)) return false;
  const me = identityOf(actor.channel, actor.userId);
  if (listedOnOwnChannel(me, admins as Record<string, unknown>)) return true;
  const links = readLinks(config);
  return directLinks(me, links).some((other) => listedOnOwnChannel(other, admins as Record<string, unknown>));
}

function listedOnOwnChannel(identity: string, admins: Record<string, unknown>): boolean {
  const p = parseIdentity(identity);
  // adminUsers is LOCKED (only the operator writes it), so any channel it names, a user's own included, counts.
  if (!p || !Object.hasOwn(admins, p.channel)) return false;
  const list = admins[p.channel];
  if (!Array.isArray(list)) return false;
  return list.some((id) => typeof id === 'string' && id.trim() !== '' && identityOf(p.channel, id.trim()) === identity);
}
