/**
 * Which conversation an actor's work belongs to, by `sessionScope`:
 * - main: one global session ('main'), the operator included;
 * - per-peer: one per person, linked identities sharing one key (the group's canonical identity);
 * - per-channel-peer (default): '<channel>:<userId>'.
 * The operator has its own session ('operator') outside `main`; the agent uses the session of the
 * person it works for, or 'agent' when working on its own.
 */
import { humanBehind } from '../../sdk/actor.js';
import type { Actor, ConfigView } from '../../sdk/types.js';
import { canonicalIdentity, identityOf, readLinks } from './identity.js';

export type SessionScope = 'main' | 'per-peer' | 'per-channel-peer';

export function sessionScopeOf(config: ConfigView): SessionScope {
  let scope: unknown;
  try {
    scope = config.get('sessionScope');
  } catch {
    scope = undefined;
  }
  // Anything unexpected gets the narrowest scope: sharing context by mistake leaks it between people.
  return scope === 'main' || scope === 'per-peer' ? scope : 'per-channel-peer';
}

export function sessionKey(actor: Actor, config: ConfigView): string {
  const scope = sessionScopeOf(config);
  if (scope === 'main') return 'main';
  const who = humanBehind(actor);
  if (!who) return 'agent';
  if (who.kind === 'operator') return 'operator';
  const channel = typeof who.channel === 'string' && who.channel !== '' ? who.channel : 'unknown';
  // A user without an id cannot be told apart from other anonymous users: they share one bucket per
  // channel, which is why nothing private should be kept for anonymous users.
  const userId = typeof who.userId === 'string' && who.userId !== '' ? who.userId : 'anonymous';
  const me = identityOf(channel, userId);
  if (scope === 'per-peer') {
    try {
      return canonicalIdentity(me, readLinks(config));
    } catch {
      return me;
    }
  }
  return me;
}
