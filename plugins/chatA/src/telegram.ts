/**
 * The Telegram side of sending: one ledgered chunk → one Bot API call, HTML with the plain fallback Telegram needs
 * when it rejects entities, files as multipart uploads, and the error classification the kit's limiter uses.
 */
import { Api, GrammyError, HttpError, InputFile } from 'grammy';
import type { Json } from '../../../sdk/index.js';
import type { SendErrorDecision } from '../../../sdk/channel-kit/index.js';

/** One ledger entry of an outbound Telegram message. */
export type TgChunk =
  | { kind: 'text'; html?: string; plain: string; replyTo?: number; thread?: number; silent?: boolean; markup?: Json }
  | { kind: 'file'; path: string; caption?: string; type: 'document' | 'photo' | 'audio' | 'voice'; replyTo?: number; thread?: number };

export function makeApi(token: string, apiRoot: string): Api {
  return new Api(token, { apiRoot: apiRoot.replace(/\/+$/, '') });
}

/** 429 → wait `retry_after`; 5xx and network → retry with backoff; other 4xx → give up. */
export function classifyTelegram(e: unknown): SendErrorDecision {
  if (e instanceof GrammyError) {
    if (e.error_code === 429) return { retry: true, afterMs: Math.max(1, Number(e.parameters?.retry_after ?? 1)) * 1000 };
    return e.error_code >= 500 ? { retry: true } : { retry: false };
  }
  if (e instanceof HttpError) return { retry: true };
  return { retry: false };
}

/** True for errors no retry fixes: a wrong or revoked token. */
export function isBadToken(e: unknown): boolean {
  return e instanceof GrammyError && (e.error_code === 401 || e.error_code === 404) && e.method === 'getMe';
}

const parseError = (e: unknown) =>
  e instanceof GrammyError && e.error_code === 400 && /can't parse entities|unsupported start tag|can't find end/i.test(e.description);

/** Sends one chunk; returns the Telegram message id. */
export async function sendChunk(api: Api, chatId: string, c: TgChunk): Promise<string> {
  const reply = c.replyTo ? { reply_parameters: { message_id: c.replyTo, allow_sending_without_reply: true } } : {};
  const thread = c.thread ? { message_thread_id: c.thread } : {};
  if (c.kind === 'file') {
    const other = { ...reply, ...thread, ...(c.caption ? { caption: c.caption.slice(0, 1024) } : {}) };
    const file = new InputFile(c.path);
    const m =
      c.type === 'photo'
        ? await api.sendPhoto(chatId, file, other)
        : c.type === 'voice'
          ? await api.sendVoice(chatId, file, other)
          : c.type === 'audio'
            ? await api.sendAudio(chatId, file, other)
            : await api.sendDocument(chatId, file, other);
    return String(m.message_id);
  }
  const markup = c.markup ? { reply_markup: c.markup as never } : {};
  const base = {
    ...reply,
    ...thread,
    ...markup,
    ...(c.silent ? { disable_notification: true } : {}),
    link_preview_options: { is_disabled: true },
  };
  if (c.html !== undefined) {
    try {
      return String((await api.sendMessage(chatId, c.html, { ...base, parse_mode: 'HTML' })).message_id);
    } catch (e) {
      if (!parseError(e)) throw e;
      // Telegram refused the entities: the same words without formatting still reach the user.
    }
  }
  return String((await api.sendMessage(chatId, c.plain, base)).message_id);
}

/** Edits a message's text, with the same plain fallback. */
export async function editText(api: Api, chatId: string, messageId: number, html: string, plain: string): Promise<void> {
  try {
    await api.editMessageText(chatId, messageId, html, { parse_mode: 'HTML' });
  } catch (e) {
    if (!parseError(e)) throw e;
    await api.editMessageText(chatId, messageId, plain);
  }
}
