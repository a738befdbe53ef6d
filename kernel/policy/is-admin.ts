/**
 * Is this actor an admin? Fails closed: anything missing, malformed or surprising answers "no".
 *
 * - operator (CLI, authenticated gateway): always.
 * - user: only when `adminUsers[<their channel>]` lists their id, or an identity directly linked
 *   to theirs (identityLinks, either direction) is listed on its own channel.
 * - agent: only through the person it works for (`onBehalfOf`); on its own, never.
 */
import { humanBehind } from '../../sdk/actor.js';
import type { Actor, ConfigView } from '../../sdk/types.js';
import { directLinks, identityOf, parseIdentity, readLinks } from './identity.js';

export function isAdmin(actor: Actor | undefined, config: ConfigView): boolean {
  try {
    // The agent counts only through the human it works for; a chain too long to follow has nobody behind it.
    const who = humanBehind(actor);
    if (who?.kind === 'operator') return true;
    return who?.kind === 'user' && isAdminUser(who, config);
  } catch {
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
