/**
 * Who may confirm a command or approve a configuration change: a HUMAN admin.
 *
 * Re-derived from configuration the way the kernel decides admin rights (plugins cannot import the kernel):
 * the operator always; a user when `adminUsers[<channel>]` lists them, or an identity directly linked to theirs
 * (`identityLinks`, either direction) is listed on its own channel; an agent only when it acts `onBehalfOf` such a
 * human. The agent acting on its own (no `onBehalfOf`) is never an approver. Work started by untrusted content
 * (`untrusted` anywhere in the chain) cannot approve either. Fails closed.
 */
import type { Actor, ConfigView } from '../../../sdk/index.js';

const ADMIN_CHANNELS = new Set(['chatA', 'chatB', 'chatC', 'chatD', 'email']);

function identityOf(channel: string, userId: string): string {
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

export function isAdminUser(who: Actor, config: ConfigView): boolean {
  try {
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
    if (listed(me)) return true;
    const raw = safeGet(config, 'identityLinks');
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return false;
    const linked = new Set<string>();
    for (const [from, to] of Object.entries(raw as Record<string, unknown>)) {
      if (typeof to !== 'string') continue;
      const a = parseIdentity(from);
      const b = parseIdentity(to);
      if (!a || !b) continue;
      const ia = identityOf(a.channel, a.userId);
      const ib = identityOf(b.channel, b.userId);
      if (ia === me && ib !== me) linked.add(ib);
      if (ib === me && ia !== me) linked.add(ia);
    }
    return [...linked].some(listed);
  } catch {
    return false;
  }
}

export type Approver = { ok: true; human: Actor } | { ok: false; reason: string };

/** May this actor confirm on a human's behalf? */
export function approverOf(actor: Actor, config: ConfigView): Approver {
  if (actor.kind === 'agent' && !actor.onBehalfOf) {
    return { ok: false, reason: 'the agent cannot approve on its own (self-approval): a human (the operator or a channel admin) must approve' };
  }
  const human = humanBehind(actor);
  if (!human) return { ok: false, reason: 'no human is behind this request, so it cannot approve' };
  if (tainted(actor)) return { ok: false, reason: 'this request was started by untrusted content, so it cannot approve' };
  if (!isAdminUser(human, config)) return { ok: false, reason: `${describe(human)} is not an admin, so it cannot approve` };
  return { ok: true, human };
}

export function describe(a: Actor | undefined): string {
  if (!a) return 'nobody';
  if (a.kind === 'operator') return `the operator (${a.channel})`;
  if (a.kind === 'agent') return a.onBehalfOf ? `the agent for ${describe(a.onBehalfOf)}` : 'the agent on its own';
  return `user ${a.userId ?? '?'} on ${a.channel}`;
}
