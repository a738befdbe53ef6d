/**
 * Who a piece of work answers, and where a messaging skill sends: read once here, so the kernel's policy (which
 * refuses an outbound skill on untrusted work unless it answers the requester) and the messaging plugin (which
 * sends) cannot read an action two ways.
 */
import { AUTONOMY_SOURCE, humanBehind, OPERATOR_SOURCES } from './actor.js';
import type { Action, Actor } from './types.js';

/**
 * One place a message can go: a channel and the id of a chat, conversation, user or mail address on it.
 * @example const to: Address = { channel: 'chatA', id: '42' };
 */
export interface Address {
  channel: string;
  id: string;
}

const CHATB_JID = /@(s\.whatsapp\.net|g\.us|c\.us|lid|broadcast|newsletter)$/i;

/**
 * The channel a messaging skill sends on (SPEC "Channel detection for send_file"): the explicit parameter, then
 * the source of the current action (a chat, not an operator source or autonomy), then the form of the id (a chatB
 * JID suffix means chatB, 17 to 20 digits chatC, anything else chatA).
 * @example detectChannel(undefined, undefined, '4915123456789@s.whatsapp.net') // 'chatB'
 */
export function detectChannel(explicit: string | undefined, action: Action | undefined, jid: string): string {
  if (explicit) return explicit;
  if (action && !OPERATOR_SOURCES.has(action.source) && action.source !== AUTONOMY_SOURCE) return action.source;
  if (CHATB_JID.test(jid)) return 'chatB';
  if (/^\d{17,20}$/.test(jid)) return 'chatC';
  return 'chatA';
}

/**
 * An id as text: a trimmed non-empty string, or a finite number written out; anything else is undefined.
 * @example idText(' 42 ') // '42'
 */
export function idText(v: unknown): string | undefined {
  if (typeof v === 'string') return v.trim() || undefined;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return undefined;
}

function samePerson(a: Actor | undefined, b: Actor | undefined): boolean {
  return a !== undefined && b !== undefined && a.kind === b.kind && a.channel === b.channel && a.userId === b.userId;
}

/**
 * Whom this work answers: the chat the action came from (its channel and `metadata.replyTo.chatId`; for email the
 * sender's address) when the action was recorded for the same person the call works for, and that person's own id
 * on their channel. Empty for the operator's sources, autonomy, and work nobody is provably behind.
 * @example requesterOf(call.actor, call.action) // [{ channel: 'chatA', id: '-100200' }, { channel: 'chatA', id: '42' }]
 */
export function requesterOf(actor: Actor | undefined, action: Action | undefined): Address[] {
  const out: Address[] = [];
  const who = humanBehind(actor);
  if (who?.kind !== 'user') return out;
  if (action && !OPERATOR_SOURCES.has(action.source) && action.source !== AUTONOMY_SOURCE) {
    const chat = idText(action.metadata?.replyTo?.chatId);
    // The action's reply address counts only for the person the action was recorded for.
    if (chat && samePerson(humanBehind(action.metadata?.actor), who)) out.push({ channel: action.source, id: chat });
  }
  const user = idText(who.userId);
  // An email user id that is not a plain address (the email channel's `unverified:<from>`) is nowhere mail can go.
  const addressable = user !== undefined && (who.channel !== 'email' || /^[^\s@:]+@[^\s@]+$/.test(user));
  const own = addressable && typeof who.channel === 'string' && who.channel ? { channel: who.channel, id: user } : undefined;
  if (own && !out.some((a) => sameAddress(a, own))) out.push(own);
  return out;
}

/**
 * Whether two addresses name the same place (mail addresses compare case-insensitively).
 * @example sameAddress({ channel: 'email', id: 'Ada@x.org' }, { channel: 'email', id: 'ada@x.org' }) // true
 */
export function sameAddress(a: Address, b: Address): boolean {
  if (a.channel !== b.channel) return false;
  return a.channel === 'email' ? a.id.toLowerCase() === b.id.toLowerCase() : a.id === b.id;
}
