/**
 * The WhatsApp side of sending: one ledgered chunk → one message with an id derived from the ledger key, so a chunk
 * sent again after a crash or a lost answer carries the id of its first attempt and WhatsApp and the recipient's
 * phone keep one message (both deduplicate by message id). Plus the error classification the kit's limiter uses and
 * the disconnects no retry fixes.
 */
import { createHash } from 'node:crypto';
import type { WASocket } from '@whiskeysockets/baileys';
import type { SendErrorDecision } from '../../../sdk/channel-kit/index.js';
import type { OutboundFile } from '../../../sdk/index.js';
import { fileContent } from './media.js';

/** One ledger entry of an outbound WhatsApp message (JSON: the id survives a crash with it). */
export type WaChunk =
  | { kind: 'text'; text: string; id: string; quote?: WaQuote }
  | { kind: 'file'; path: string; caption?: string; as?: NonNullable<OutboundFile['kind']>; id: string; quote?: WaQuote };

/** The message a reply quotes: its id, its author in a group, the start of its text. */
export type WaQuote = { id: string; participant?: string; text: string };

/** A contact (`<number>@s.whatsapp.net`, the older `@c.us`, a LID) or a group (`<id>@g.us`, `<id>-<t>@g.us`). */
export const CHAT_JID = /^(?:\d{5,20}(?::\d+)?@(?:s\.whatsapp\.net|c\.us|lid)|\d{5,20}(?:-\d{5,20})?@g\.us)$/;

/** The message id of chunk `index` of ledger key `key`: WhatsApp Web's form (`3EB0` and 18 hex digits), stable. */
export function chunkMessageId(key: string, index: number): string {
  return `3EB0${createHash('sha256').update(`${key}\u0000${index}`).digest('hex').slice(0, 18).toUpperCase()}`;
}

/** Thrown while no linked connection is open: the limiter waits and tries the same chunk (same id) again. */
export class NotConnectedError extends Error {
  constructor() {
    super('WhatsApp is not connected');
    this.name = 'NotConnectedError';
  }
}

const chatJid = (jid: string) => jid.replace(/@c\.us$/, '@s.whatsapp.net');

/** Sends one chunk on the open socket; returns the message id. */
export async function sendChunk(sock: WASocket | undefined, to: string, c: WaChunk): Promise<string> {
  if (!sock?.user) throw new NotConnectedError();
  const jid = chatJid(to);
  const quoted = c.quote
    ? {
        key: { remoteJid: jid, id: c.quote.id, fromMe: false, ...(c.quote.participant ? { participant: c.quote.participant } : {}) },
        message: { conversation: c.quote.text },
      }
    : undefined;
  const content =
    c.kind === 'file'
      ? fileContent({ path: c.path, ...(c.caption ? { caption: c.caption } : {}), ...(c.as ? { kind: c.as } : {}) })
      : { text: c.text };
  const sent = await sock.sendMessage(jid, content, { messageId: c.id, ...(quoted ? { quoted } : {}) });
  return sent?.key.id ?? c.id;
}

const statusOf = (e: unknown): number | undefined => {
  const out = (e as { output?: { statusCode?: unknown } } | undefined)?.output;
  return typeof out?.statusCode === 'number' ? out.statusCode : undefined;
};

/** Not connected, closed, timed out, 5xx → retry; 429 (rate-overlimit) → wait; other refusals → give up. */
export function classifyWhatsApp(e: unknown): SendErrorDecision {
  if (e instanceof NotConnectedError) return { retry: true, afterMs: 1000 };
  const status = statusOf(e);
  if (status === 429) return { retry: true, afterMs: 5000 };
  if (status === 408 || status === 428 || status === 440 || status === 503 || (status !== undefined && status >= 500))
    return { retry: true };
  const code = (e as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && /^(ECONNRESET|ECONNREFUSED|ETIMEDOUT|EPIPE)/.test(code)) return { retry: true };
  if (e instanceof Error && /Connection Closed|Timed Out|Connection was lost/i.test(e.message)) return { retry: true };
  return { retry: false };
}

/** A connection WhatsApp closed for good: 401 (this device was unlinked), 440 (another client took the session), 411, 403. */
export class WhatsAppClosedError extends Error {
  constructor(
    readonly status: number,
    readonly sessionPath: string,
  ) {
    super(`WhatsApp closed the connection (${status})`);
    this.name = 'WhatsAppClosedError';
  }
}

/** The message to stop with when `e` is a close no retry fixes, else undefined. */
export function fatalMessage(e: unknown): string | undefined {
  if (!(e instanceof WhatsAppClosedError)) return undefined;
  switch (e.status) {
    case 401:
      return `WhatsApp unlinked this device (logged out, 401). Its session in ${e.sessionPath} is no longer valid: delete that directory and restart Keel to link again with a new QR code.`;
    case 440:
      return `Another client took over this WhatsApp session (stream conflict "replaced", 440): a second Keel, or a copy of ${e.sessionPath}, is connected with the same keys. Stop the other one, then restart Keel; reconnecting now would only take turns throwing each other out.`;
    case 411:
      return 'WhatsApp refused this linked device as out of date (multidevice mismatch, 411). Delete the session directory and link again.';
    case 403:
      return 'WhatsApp refused the connection (403 forbidden): the account may be banned or restricted. Check the phone.';
    default:
      return undefined;
  }
}
