/**
 * A recorded Telegram update → an InboundMessage for `receive` (files downloaded under downloads/chatA/), a
 * built-in command, or nothing. Runs once per update (the ingress dedupes), possibly again after a crash, so every
 * step here is repeatable: downloads overwrite, `receive` recognises an action it already queued.
 */
import { errorsFor } from '../../../sdk/errors.js';
import type { Api } from 'grammy';
import { downloadTo, editKey, type Transcribe, transcriptNote } from '../../../sdk/channel-kit/index.js';
import { errorMessage, type InboundMessage, type QuotedMessage } from '../../../sdk/index.js';

const coded = errorsFor('chatA');

/** The parts of a Telegram update we use (as JSON in the ingress). */
export interface TgUpdate {
  update_id: number;
  message?: TgMsg;
  /** A new version of a message sent earlier: the same shape, with `edit_date`. */
  edited_message?: TgMsg;
  callback_query?: { id: string; from: { id: number; first_name?: string; username?: string }; data?: string; message?: TgMsg };
}
interface TgFile {
  file_id: string;
  file_name?: string;
  mime_type?: string;
  file_size?: number;
}
export interface TgMsg {
  message_id: number;
  message_thread_id?: number;
  /** When the message was written (Unix seconds); an edit keeps the original's. */
  date?: number;
  /** Set on an edit: when it was made (Unix seconds). */
  edit_date?: number;
  chat: { id: number; type: string };
  from?: { id: number; is_bot?: boolean; first_name?: string; username?: string };
  text?: string;
  caption?: string;
  entities?: Array<{ type: string; offset: number; length: number }>;
  photo?: Array<TgFile & { width: number }>;
  document?: TgFile;
  voice?: TgFile;
  audio?: TgFile;
  /** The message this one replies to (in a forum topic, every message "replies" to the topic's creation). */
  reply_to_message?: TgReplied;
  /** The part of the replied-to message the person selected to quote. */
  quote?: { text?: string };
  /** Set on a forwarded message: where it came from (its text and files are the message's own). */
  forward_origin?: TgOrigin;
  /** A reply to a message of another chat: where that came from (its text only as far as `quote` has it). */
  external_reply?: { origin?: TgOrigin };
}

/** Telegram's MessageOrigin: a user (maybe hidden), a chat or a channel. */
export interface TgOrigin {
  type: string;
  date?: number;
  sender_user?: { id: number; is_bot?: boolean; first_name?: string; username?: string };
  sender_user_name?: string;
  sender_chat?: { id: number; title?: string; username?: string };
  chat?: { id: number; title?: string; username?: string };
}

/**
 * A forwarded message as the agent reads it: quoted as forwarded, by its origin (trusted only when that is a user
 * who is an admin, or the bot); undefined when `m` is not a forward or has nothing to quote.
 */
export function forwardOf(m: TgMsg, botId: number | undefined): QuotedMessage | undefined {
  const o = m.forward_origin;
  if (!o) return undefined;
  const files = [
    ...(m.photo?.length ? ['[photo]'] : []),
    ...(m.document ? [`[file: ${m.document.file_name ?? 'document'}]`] : []),
    ...(m.voice ? ['[voice note]'] : []),
    ...(m.audio ? ['[audio]'] : []),
  ];
  const text = [(m.text ?? m.caption ?? '').trim(), ...files].filter(Boolean).join('\n');
  if (!text) return undefined;
  return { ...originAuthor(o, botId), text, ...originAt(o), forwarded: true };
}

/** Who a message origin names: a user by id (the bot known as such); a hidden user, chat or channel by name only. */
function originAuthor(o: TgOrigin, botId: number | undefined): Pick<QuotedMessage, 'userId' | 'userName' | 'fromBot'> {
  const u = o.type === 'user' ? o.sender_user : undefined;
  const name = u ? (u.username ?? u.first_name) : (o.sender_user_name ?? o.sender_chat?.title ?? o.chat?.title);
  return {
    userId: u ? String(u.id) : '',
    ...(name ? { userName: name } : {}),
    ...(u && botId !== undefined && u.id === botId ? { fromBot: true } : {}),
  };
}

const originAt = (o: TgOrigin) => (typeof o.date === 'number' ? { at: new Date(o.date * 1000).toISOString() } : {});

/** What chatA reads of the message a reply answers. */
export interface TgReplied {
  message_id?: number;
  date?: number;
  from?: { id: number; is_bot?: boolean; first_name?: string; username?: string };
  text?: string;
  caption?: string;
  photo?: unknown[];
  document?: { file_name?: string };
  voice?: unknown;
  audio?: unknown;
  forum_topic_created?: unknown;
}

/**
 * The message `m` replies to, as the agent reads it quoted: the part the person selected when they quoted one,
 * else its text or caption, its files named. Undefined for no reply, and for the topic's creation that every message
 * of a forum topic points at.
 * @example quoteOf({ ...msg, reply_to_message: { message_id: 7, from: { id: 42, username: 'bob' }, text: 'hi' } }, 1)
 * // { userId: '42', userName: 'bob', text: 'hi' }
 */
export function quoteOf(m: TgMsg, botId: number | undefined): QuotedMessage | undefined {
  const r = m.reply_to_message;
  // A reply to a message of another chat: Telegram gives only where it came from, and the part the person quoted.
  if (!r && m.external_reply?.origin && m.quote?.text?.trim())
    return { ...originAuthor(m.external_reply.origin, botId), text: m.quote.text.trim(), ...originAt(m.external_reply.origin) };
  if (!r?.from || r.forum_topic_created !== undefined) return undefined;
  if (m.message_thread_id !== undefined && r.message_id === m.message_thread_id) return undefined;
  const files = [
    ...(r.photo?.length ? ['[photo]'] : []),
    ...(r.document ? [`[file: ${r.document.file_name ?? 'document'}]`] : []),
    ...(r.voice ? ['[voice note]'] : []),
    ...(r.audio ? ['[audio]'] : []),
  ];
  const chosen = m.quote?.text?.trim();
  const text = [chosen || (r.text ?? r.caption ?? '').trim(), ...(chosen ? [] : files)].filter(Boolean).join('\n');
  if (!text) return undefined;
  const fromBot = botId !== undefined && r.from.id === botId;
  return {
    userId: String(r.from.id),
    ...(r.from.username ? { userName: r.from.username } : r.from.first_name ? { userName: r.from.first_name } : {}),
    ...(fromBot ? { fromBot: true } : {}),
    text,
    ...(typeof r.date === 'number' ? { at: new Date(r.date * 1000).toISOString() } : {}),
  };
}

/** The ingress id of a message's first delivery: `<chat id>:<message id>`. Its edits name it as the message they edit. */
export const messageKey = (m: TgMsg): string => `${m.chat.id}:${m.message_id}`;

/** The edit time the kit keys an edit by: Telegram's `edit_date` (Unix seconds) as a string. */
export const editedAt = (m: TgMsg): string => String(m.edit_date ?? 0);

/**
 * Where an update is kept in the ingress: unique per bot, one chat per key. An edit has its own key (the kit's
 * `editKey` of the message's key and its `edit_date`): each version is handled once, however often it is delivered.
 */
export function ingressKey(u: TgUpdate): { messageId: string; chatId: string } | undefined {
  if (u.message) return { messageId: messageKey(u.message), chatId: String(u.message.chat.id) };
  if (u.edited_message)
    return { messageId: editKey(messageKey(u.edited_message), editedAt(u.edited_message)), chatId: String(u.edited_message.chat.id) };
  if (u.callback_query)
    return { messageId: `cb:${u.callback_query.id}`, chatId: String(u.callback_query.message?.chat.id ?? u.callback_query.from.id) };
  return undefined;
}

/** `/cmd@bot args` → 'cmd' when addressed to us (or to nobody in particular). */
export function commandOf(m: TgMsg, botUsername: string | undefined): string | undefined {
  const e = m.entities?.find((x) => x.type === 'bot_command' && x.offset === 0);
  if (!e || !m.text) return undefined;
  const [name, at] = m.text.slice(1, e.length).split('@') as [string, string | undefined];
  if (at && botUsername && at.toLowerCase() !== botUsername.toLowerCase()) return undefined;
  return name.toLowerCase();
}

/**
 * Saves one Telegram file under downloads/chatA/ through the kit's download (20 MB cap, safe name, overwritten by a
 * re-run). A file that cannot be saved becomes a note in `notes` instead: the message is never lost for a file.
 */
async function save(d: ToInboundDeps, f: TgFile, prefix: string, name: string, what: string, notes: string[]): Promise<string | undefined> {
  try {
    const info = await d.api.getFile(f.file_id, d.signal as never);
    if (!info.file_path) throw coded('KEEL_E_PROVIDER_FAILED', 'Telegram gave no file path (over the Bot API limit of 20 MB?)');
    return await downloadTo({
      url: `${d.apiRoot.replace(/\/+$/, '')}/file/bot${d.token}/${info.file_path}`,
      home: d.home,
      channel: 'chatA',
      prefix,
      name,
      ...(f.file_size !== undefined ? { size: f.file_size } : {}),
      ...(d.signal ? { signal: d.signal } : {}),
    });
  } catch (e) {
    if (d.signal?.aborted) throw e;
    // The reason only: the download address holds the bot token.
    d.warn?.(`chatA: could not download the ${what} of message ${prefix}: ${errorMessage(e)}`);
    notes.push(`[${what} sent on Telegram${f.file_name ? `: ${f.file_name}` : ''}; it could not be downloaded: ${errorMessage(e)}]`);
    return undefined;
  }
}

export interface ToInboundDeps {
  api: Api;
  apiRoot: string;
  token: string;
  home: string;
  bot: { username?: string; id?: number };
  /**
   * Speech to text of a saved voice note or audio file: `undefined` when no provider can transcribe, a rejection
   * when the provider failed (the message still goes through, with a note and the file's path).
   */
  transcribe?: Transcribe;
  /** Where a failed transcription is reported (never with the file's content or a key). */
  warn?: (message: string) => void;
  signal?: AbortSignal;
}

/**
 * The inbound message of a Telegram message update or edit (files downloaded), its `messageId` the update's ingress
 * key. An edit is read exactly as a fresh message (the same gating fields, quote and command); its files are
 * downloaded again under their own names (`<chat>_<message>_e<edit_date>_…`), so a running action's files of the
 * earlier version are never overwritten.
 */
export async function toInbound(u: TgUpdate, d: ToInboundDeps): Promise<InboundMessage | undefined> {
  const key = ingressKey(u);
  if (!key) return undefined;
  if (u.callback_query) {
    const q = u.callback_query;
    return {
      channel: 'chatA',
      messageId: key.messageId,
      chatId: key.chatId,
      userId: String(q.from.id),
      ...(q.from.username ? { userName: q.from.username } : {}),
      text: `[button pressed] ${q.data ?? ''}`.trim(),
      isGroup: q.message ? q.message.chat.type !== 'private' : false,
      mentioned: true,
      replyTo: { ...(q.message ? { messageId: String(q.message.message_id) } : {}), callbackData: q.data ?? '' },
    };
  }
  const m = (u.message ?? u.edited_message)!;
  if (!m.from || m.from.is_bot) return undefined;
  const prefix = `${m.chat.id}_${m.message_id}${u.edited_message ? `_e${editedAt(m)}` : ''}`;
  const attachments: NonNullable<InboundMessage['attachments']> = [];
  const notes: string[] = [];
  const photo = m.photo?.slice().sort((a, b) => b.width - a.width)[0];
  if (photo) {
    const path = await save(d, photo, prefix, 'photo.jpg', 'photo', notes);
    if (path) attachments.push({ path, kind: 'photo', mime: 'image/jpeg' });
  }
  if (m.document) {
    const path = await save(d, m.document, prefix, m.document.file_name ?? 'document', 'document', notes);
    if (path)
      attachments.push({
        path,
        kind: 'document',
        ...(m.document.file_name ? { name: m.document.file_name } : {}),
        ...(m.document.mime_type ? { mime: m.document.mime_type } : {}),
      });
  }
  for (const [kind, f] of [
    ['voice', m.voice],
    ['audio', m.audio],
  ] as const) {
    if (!f) continue;
    const path = await save(d, f, prefix, `${kind}.ogg`, `${kind} note`, notes);
    if (!path) continue;
    const mime = f.mime_type ?? 'audio/ogg';
    attachments.push({ path, kind, mime });
    notes.push(await transcriptNote(kind, path, mime, d));
  }
  // A forward is someone else's words: quoted (with its origin), the task only says a message was forwarded.
  const forwarded = forwardOf(m, d.bot.id);
  const text = [forwarded ? '[forwarded a message]' : (m.text ?? m.caption ?? ''), ...notes].filter(Boolean).join('\n');
  const command = forwarded ? undefined : commandOf(m, d.bot.username);
  const quoted = command ? undefined : (forwarded ?? quoteOf(m, d.bot.id));
  const isGroup = m.chat.type !== 'private';
  const mentioned =
    isGroup &&
    ((d.bot.username !== undefined && (m.text ?? m.caption ?? '').toLowerCase().includes(`@${d.bot.username.toLowerCase()}`)) ||
      (d.bot.id !== undefined && m.reply_to_message?.from?.id === d.bot.id));
  return {
    channel: 'chatA',
    messageId: key.messageId,
    chatId: key.chatId,
    userId: String(m.from.id),
    // The handle people mention them by, else the name Telegram shows (many people have no handle).
    ...(m.from.username ? { userName: m.from.username } : m.from.first_name ? { userName: m.from.first_name } : {}),
    text,
    isGroup,
    mentioned,
    ...(command ? { command } : {}),
    ...(m.message_thread_id ? { threadId: String(m.message_thread_id) } : {}),
    ...(attachments.length ? { attachments } : {}),
    // The kit's key is chat-qualified; replies need Telegram's own message id.
    replyTo: { messageId: String(m.message_id) },
    ...(quoted ? { quoted } : {}),
  };
}
