/**
 * WhatsApp messages as Keel reads them: a baileys `WAMessage` reduced to what the channel records (JSON, so it
 * survives in the ingress store as is), and what decides whether it is addressed to Keel. See docs/whatsapp.md.
 */
import type { proto, WAMessage } from '@whiskeysockets/baileys';
import { getContentType, isJidGroup, isLidUser, jidDecode, jidNormalizedUser, normalizeMessageContent } from '@whiskeysockets/baileys';
import type { InboundMessage } from '../../../sdk/index.js';
import { mediaOf, type WaMedia } from './media.js';

/** One recorded WhatsApp message (or edit, or deletion), JSON. */
export interface WaIn {
  id: string;
  /** The chat: a contact's JID, a group's (`…@g.us`), or for a status update the poster's JID (answers go there). */
  chat: string;
  /** Who wrote it: the phone-number JID when WhatsApp says it, else the LID. */
  sender: string;
  senderName?: string;
  group: boolean;
  /** A status update (status@broadcast). */
  status?: boolean;
  /** Written in the account's own "message yourself" chat. */
  self?: boolean;
  /** Seconds since the epoch, as WhatsApp stamps it. */
  at: number;
  text: string;
  mentions: string[];
  /** The message it replies to. */
  quoted?: { id: string; participant?: string; text: string };
  /** Replies to one of the account's own messages. */
  repliesToMe?: boolean;
  /** A MESSAGE_EDIT: `of` the edited message's id. */
  edit?: { of: string };
  /** A REVOKE ("delete for everyone"): `of` the deleted message's id. */
  revoke?: { of: string };
  /** The file it carries (fetched when the message is handled). */
  media?: WaMedia;
}

/** The account this device is linked to: its phone-number JID and LID, without device parts. */
export interface Me {
  pn: string;
  lid?: string;
}

const MEDIA_LABEL: Record<string, string> = {
  imageMessage: 'image',
  videoMessage: 'video',
  audioMessage: 'audio',
  documentMessage: 'document',
  stickerMessage: 'sticker',
  contactMessage: 'contact',
  locationMessage: 'location',
};

/** The text a person reads in a message: its body or caption, media named in brackets. */
export function textOf(message: proto.IMessage | null | undefined): string {
  const m = normalizeMessageContent(message);
  if (!m) return '';
  if (m.conversation) return m.conversation;
  if (m.extendedTextMessage?.text) return m.extendedTextMessage.text;
  const type = getContentType(m);
  const label = type ? MEDIA_LABEL[type] : undefined;
  if (!label || !type) return '';
  const part = (m as Record<string, { caption?: string | null; fileName?: string | null; ptt?: boolean | null } | undefined>)[type];
  const name = part?.fileName ? `: ${part.fileName}` : '';
  return [`[${part?.ptt ? 'voice note' : label}${name}]`, part?.caption ?? ''].filter(Boolean).join(' ');
}

const contextOf = (m: proto.IMessage | null | undefined): proto.IContextInfo | undefined => {
  const n = normalizeMessageContent(m);
  if (!n) return undefined;
  const type = getContentType(n);
  const part = type ? (n as Record<string, { contextInfo?: proto.IContextInfo | null } | undefined>)[type] : undefined;
  return part?.contextInfo ?? undefined;
};

const isMe = (jid: string | null | undefined, me: Me) => {
  if (!jid) return false;
  const user = jidNormalizedUser(jid);
  return user === me.pn || (me.lid !== undefined && user === me.lid);
};

const num = (v: unknown): number =>
  typeof v === 'number'
    ? v
    : v && typeof (v as { toNumber?: () => number }).toNumber === 'function'
      ? (v as { toNumber(): number }).toNumber()
      : Number(v ?? 0);

/**
 * What Keel records of a baileys message, or why it records nothing: `own` (the account wrote it outside its own
 * chat: the owner talking to a friend from their phone), `status-off`, `empty` (a receipt-like stub, a reaction, a
 * key distribution), `peer`.
 */
export function toWaIn(msg: WAMessage, me: Me, o: { statusReplies: boolean }): WaIn | { skip: string } {
  const key = msg.key;
  const remote = key.remoteJid ?? '';
  const status = remote === 'status@broadcast';
  const group = isJidGroup(remote) === true;
  const self = !group && !status && key.fromMe === true && isMe(remote, me);
  if (key.fromMe && !self) return { skip: 'own' };
  if (status && !o.statusReplies) return { skip: 'status-off' };
  const senderRaw = group || status ? (key.participant ?? '') : remote;
  const alt = group || status ? (key as { participantAlt?: string }).participantAlt : (key as { remoteJidAlt?: string }).remoteJidAlt;
  // Admin lists and profiles name people by phone number: the PN form when WhatsApp gave one.
  const sender = jidNormalizedUser(isLidUser(senderRaw) && alt && !isLidUser(alt) ? alt : senderRaw || remote);
  const base = {
    id: key.id ?? '',
    chat: status ? sender : remote,
    sender: self ? me.pn : sender,
    ...(msg.pushName ? { senderName: msg.pushName } : {}),
    group,
    ...(status ? { status: true } : {}),
    ...(self ? { self: true } : {}),
    at: num(msg.messageTimestamp),
  };
  const content = normalizeMessageContent(msg.message);
  const protocol = content?.protocolMessage;
  if (protocol?.key?.id) {
    // 14: MESSAGE_EDIT, 0: REVOKE ("delete for everyone")
    if (protocol.type === 14 && protocol.editedMessage)
      return { ...base, text: textOf(protocol.editedMessage), mentions: [], edit: { of: protocol.key.id } };
    if (protocol.type === 0) return { ...base, text: '', mentions: [], revoke: { of: protocol.key.id } };
    return { skip: 'empty' };
  }
  const text = textOf(content);
  if (!text.trim()) return { skip: 'empty' };
  const ctxInfo = contextOf(content);
  const mentions = (ctxInfo?.mentionedJid ?? []).filter((j): j is string => typeof j === 'string');
  const quotedText = ctxInfo?.quotedMessage ? textOf(ctxInfo.quotedMessage) : '';
  const media = mediaOf(content);
  return {
    ...base,
    ...(media ? { media } : {}),
    text: status ? `[status update] ${text}` : text,
    mentions,
    ...(ctxInfo?.stanzaId
      ? {
          quoted: {
            id: ctxInfo.stanzaId,
            ...(ctxInfo.participant ? { participant: jidNormalizedUser(ctxInfo.participant) } : {}),
            text: quotedText,
          },
        }
      : {}),
    ...(ctxInfo?.participant && isMe(ctxInfo.participant, me) ? { repliesToMe: true } : {}),
  };
}

/**
 * Whether Keel should answer `m` (the kit's `mentioned`): in the account's own chat always; in a direct chat when
 * the sender is the owner or an admin; in a group when it mentions the account or replies to it and comes from the
 * owner or an admin, or from anyone with auto-reply on. With auto-reply on, the kit answers every direct message
 * anyway; a group message that does not address the account is never answered.
 */
export function addressed(m: WaIn, me: Me, o: { trusted: (jid: string) => boolean; autoReply: boolean }): boolean {
  if (m.self) return true;
  if (!m.group) return o.trusted(m.sender);
  const toMe = m.repliesToMe === true || m.mentions.some((j) => isMe(j, me));
  return toMe && (o.autoReply || o.trusted(m.sender));
}

/** `/status` (or `/Status extra words`) → 'status'; anything else undefined. */
export function commandOf(text: string): string | undefined {
  const c = /^\/([a-z]+)(?:\s|$)/i.exec(text.trim());
  return c ? c[1]!.toLowerCase() : undefined;
}

/**
 * The kit's inbound message for `m`. A `/command` is one only from someone Keel answers (`isAddressed`, or anyone
 * with auto-reply on): on a personal number a friend's "/help" is just text, and does not reveal Keel.
 */
export function toInbound(m: WaIn, isAddressed: boolean, o: { autoReply?: boolean } = {}): InboundMessage {
  const command = isAddressed || o.autoReply ? commandOf(m.text) : undefined;
  return {
    ...(command ? { command } : {}),
    channel: 'chatB',
    messageId: m.id,
    chatId: m.chat,
    userId: m.sender,
    ...(m.senderName ? { userName: m.senderName } : {}),
    text: m.text,
    isGroup: m.group,
    mentioned: isAddressed,
    replyTo: { chatId: m.chat, messageId: m.id, ...(m.group ? { participant: m.sender } : {}), text: m.text.slice(0, 200) },
    ...(m.quoted
      ? {
          quoted: {
            userId: m.quoted.participant ?? '',
            text: m.quoted.text,
            ...(m.repliesToMe ? { fromBot: true } : {}),
          },
        }
      : {}),
    metadata: {
      ...(m.senderName ? { pushName: m.senderName } : {}),
      ...(m.status ? { statusUpdate: true } : {}),
      ...(m.self ? { selfChat: true } : {}),
    },
  };
}

/** A JID as a person reads it: `+4915123456789` for a phone number, the group id otherwise. */
export function showJid(jid: string): string {
  const d = jidDecode(jid);
  return d?.server === 's.whatsapp.net' ? `+${d.user}` : jid;
}
