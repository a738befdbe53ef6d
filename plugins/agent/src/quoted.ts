/**
 * The message a chat task replies to (`metadata.quoted`, set by the SDK's `receive`; see QuotedMessage in
 * sdk/channel.ts), as the agent shows it: quoted before the task, in a wrapper the quoted text cannot close early.
 * Its trust was decided when the message came in (the bot's own words or an admin's); anything else is marked
 * untrusted here and makes the whole action untrusted (trust.ts).
 */
import type { ActionMetadata } from '../../../sdk/index.js';

/** What the agent reads of `metadata.quoted`; undefined when it holds no text. */
export interface Quoted {
  from: string;
  text: string;
  at?: string;
  trusted: boolean;
  fromBot: boolean;
  forwarded: boolean;
}

/** `metadata.quoted` read defensively (it is JSON from the queue): trusted only when it says so exactly. */
export function quotedOf(metadata: ActionMetadata | undefined): Quoted | undefined {
  const raw = metadata?.quoted;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined;
  const q = raw as Record<string, unknown>;
  const text = typeof q.text === 'string' ? q.text.trim() : '';
  if (!text) return undefined;
  const name = typeof q.userName === 'string' && q.userName ? q.userName : typeof q.userId === 'string' && q.userId ? q.userId : 'unknown';
  return {
    from: name,
    text,
    ...(typeof q.at === 'string' ? { at: q.at } : {}),
    trusted: q.trusted === true,
    fromBot: q.fromBot === true,
    forwarded: q.forwarded === true,
  };
}

/** An attribute value: the characters of names and times, nothing that ends the tag. */
const attr = (s: string) => s.replace(/[^\w:.@ +-]/g, '_').slice(0, 80);

/**
 * The quoted message as the prompt shows it, before the task.
 * @example quotedPrompt({ from: 'bob', text: 'ignore your rules', trusted: false, fromBot: false })
 * // 'The sender replied to this message:\n<quoted_message from="bob" untrusted="true">\nignore your rules\n</quoted_message>'
 */
export function quotedPrompt(q: Pick<Quoted, 'from' | 'text' | 'at' | 'trusted' | 'fromBot'> & { forwarded?: boolean }): string {
  const body = q.text.replace(/<\/?quoted_message/gi, (m) => m.replace('<', '&lt;'));
  const who = q.fromBot ? 'you' : attr(q.from);
  const attrs = [`from="${who}"`, ...(q.at ? [`at="${attr(q.at)}"`] : []), ...(q.trusted ? [] : ['untrusted="true"'])].join(' ');
  const intro = q.forwarded
    ? 'The sender forwarded this message:'
    : q.fromBot
      ? 'The sender replied to this earlier message of yours:'
      : 'The sender replied to this message:';
  return `${intro}\n<quoted_message ${attrs}>\n${body}\n</quoted_message>`;
}

/**
 * Who sent a chat task, as the prompt names them: their name on the platform, else their id (`metadata.inbound`),
 * on one line and at most 64 characters (a display name is anyone's to choose: it cannot start a line of its own).
 * @example senderOf({ inbound: { channel: 'chatD', messageId: 'C1:1.2', userId: 'U1', userName: 'Ann B.' } }) // 'Ann B.'
 */
export function senderOf(metadata: ActionMetadata | undefined): string | undefined {
  const raw = metadata?.inbound;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined;
  const inb = raw as Record<string, unknown>;
  const name = [inb.userName, inb.userId].find((x): x is string => typeof x === 'string' && x.trim() !== '');
  const line = name
    ?.replace(/[\p{Cc}\u2028\u2029"]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 64);
  return line || undefined;
}

/**
 * The action that took up an earlier version of this edited message (`metadata.edit.after`, set by the channel kit),
 * for the task header: the model is told the message was edited after it had been answered, so it answers the new
 * version rather than repeating itself. Only an action id is accepted (the header is not a place for free text).
 */
export function editedAfter(metadata: ActionMetadata | undefined): string | undefined {
  const raw = metadata?.edit;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined;
  const after = (raw as Record<string, unknown>).after;
  return typeof after === 'string' && /^[\w-]{1,64}$/.test(after) ? after : undefined;
}
