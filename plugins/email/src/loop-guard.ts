/**
 * Mail Keel must never answer automatically: answering it is how mail loops and backscatter start (RFC 3834).
 * The decision reads only headers, so it is made before anything else is done with the mail.
 */

/** Raw header values by lower-case name (unfolded, without the `Name:` part), in the order they appear. */
export type HeaderLookup = (name: string) => string[];

export interface LoopCheckInput {
  header: HeaderLookup;
  /** The From address, lower case. */
  from: string | undefined;
  messageId: string | undefined;
  /** Keel's own address (emailAddress), lower case. */
  ownAddress: string | undefined;
  /** Whether Keel sent a message with this Message-ID. */
  isOwnMessageId(id: string): boolean;
}

export type LoopReason =
  | 'auto-submitted'
  | 'auto-reply'
  | 'precedence'
  | 'mailing-list'
  | 'delivery-report'
  | 'noreply-sender'
  | 'null-sender'
  | 'own-address'
  | 'own-message'
  | 'no-sender';

/** Local parts of senders that never read replies, or whose mail is generated (bounces, notifications). */
const NOREPLY_LOCAL =
  /^(?:no[-_.]?reply|do[-_.]?not[-_.]?reply|mailer[-_.]?daemon|postmaster|bounces?|notifications?|auto[-_.]?(?:reply|responder))(?:[+-].*)?$|no[-_.]?reply/i;

const first = (h: HeaderLookup, name: string) => h(name)[0]?.trim();

/**
 * Why this mail must not be answered, or undefined when it may be.
 * @example loopReason({ header: (n) => n === 'precedence' ? ['bulk'] : [], from: 'a@b.c', ... }) // 'precedence'
 */
export function loopReason(m: LoopCheckInput): LoopReason | undefined {
  const h = m.header;
  const autoSubmitted = first(h, 'auto-submitted');
  if (autoSubmitted !== undefined && autoSubmitted.split(';')[0]!.trim().toLowerCase() !== 'no') return 'auto-submitted';
  if (h('x-autoreply').length || h('x-autorespond').length || h('x-autoresponder').length) return 'auto-reply';
  // Exchange marks its own automatic mail, and asks not to be answered automatically, with this header.
  if (/\b(all|oof|autoreply)\b/i.test(first(h, 'x-auto-response-suppress') ?? '')) return 'auto-reply';
  if (/^(bulk|list|junk|auto_reply)$/i.test(first(h, 'precedence') ?? '')) return 'precedence';
  if (h('list-id').length || h('list-unsubscribe').length || h('list-post').length) return 'mailing-list';
  if (/^multipart\/report\b/i.test(first(h, 'content-type') ?? '')) return 'delivery-report';
  const returnPath = first(h, 'return-path');
  if (returnPath !== undefined && /^<\s*>$/.test(returnPath)) return 'null-sender';
  if (!m.from) return 'no-sender';
  if (m.ownAddress && m.from === m.ownAddress) return 'own-address';
  if (m.messageId && m.isOwnMessageId(m.messageId)) return 'own-message';
  const local = m.from.split('@')[0] ?? '';
  if (NOREPLY_LOCAL.test(local)) return 'noreply-sender';
  return undefined;
}
