/**
 * A loopback Telegram Bot API (127.0.0.1, port 0) for the real grammy client: `POST /bot<token>/<method>` with
 * JSON or multipart bodies, `GET /file/bot<token>/<path>` downloads, Telegram-shaped errors
 * (`{ ok: false, error_code, description, parameters: { retry_after } }`).
 *
 * getUpdates is a real long poll: it answers at once when updates at or after `offset` exist, else holds the
 * request up to `timeout` seconds; an `offset` acknowledges (drops) every earlier update, as Telegram does.
 * The fake counts what it saw so tests can prove "no update lost, no chunk twice".
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TgCall {
  method: string;
  params: Record<string, any>;
  /** Names of uploaded files (multipart). */
  files: Record<string, { name: string; size: number }>;
}

export interface TgMessage {
  message_id: number;
  chat: { id: number; type: string };
  text?: string;
  parse_mode?: string;
  reply_markup?: unknown;
  kind: 'text' | 'photo' | 'document' | 'voice' | 'audio' | 'poll';
}

export interface TgError {
  code: number;
  description: string;
  retryAfter?: number;
}

export interface FakeTelegram {
  /** API root for grammy's `client.apiRoot`. */
  apiRoot: string;
  token: string;
  calls: TgCall[];
  /** Every message the bot sent (or that a call created), in order. */
  sent: TgMessage[];
  /** Highest offset a getUpdates call acknowledged. */
  ackedOffset(): number;
  /** Queue an inbound update (update_id assigned); returns it. */
  push(update: Record<string, unknown>): Record<string, unknown> & { update_id: number };
  /** A user's text message in a private chat (chat id = user id) or a group. */
  pushText(
    text: string,
    opts?: { userId?: number; chatId?: number; group?: boolean; replyToBot?: boolean; date?: number },
  ): { update_id: number; message_id: number };
  /**
   * The user's edit of a message pushed earlier (by `pushText` or `push`), as Telegram sends it: an `edited_message`
   * update with the message as it was (same id, chat, sender, `date`, reply), the new `text` and `edit_date` (Unix
   * seconds; default now). Pushing the same `editDate` again is the same edit delivered twice.
   */
  pushEdit(messageId: number, text: string, opts?: { editDate?: number }): { update_id: number; edit_date: number };
  /** After `after` more successful calls of `method`, the next `count` calls fail with `error`. */
  failNext(method: string, error: TgError, count?: number, after?: number): void;
  /** While true, getUpdates requests are never answered (a deaf long poll). */
  stallPolls: boolean;
  /** getUpdates calls answered 409 because another poller came (two bot instances on one token). */
  conflicts: number;
  /**
   * Called with every API call before it is handled; returning 'hold' leaves it unanswered and unrecorded in
   * `sent` (the platform never accepted it), e.g. to kill the client at that moment.
   */
  onCall?: ((call: TgCall) => 'hold' | void) | undefined;
  /** Files served by getFile / download: file_id → content. */
  files: Map<string, Buffer>;
  callsOf(method: string): TgCall[];
  close(): Promise<void>;
}

/** The `bot_command` entity Telegram marks at the start of a text beginning with `/`. */
const commandEntities = (text: string) =>
  text.startsWith('/') ? [{ type: 'bot_command', offset: 0, length: text.split(/\s/)[0]!.length }] : undefined;

const BOT = { id: 7000001, is_bot: true, first_name: 'Keel', username: 'keel_test_bot' };

/** The parts of a multipart/form-data body (enough of RFC 7578 for what grammy sends). */
export function splitMultipart(raw: Buffer, boundary: string): Array<{ head: string; body: Buffer }> {
  const sep = Buffer.from(`--${boundary}`);
  const parts: Array<{ head: string; body: Buffer }> = [];
  let at = raw.indexOf(sep);
  while (at >= 0) {
    const start = at + sep.length;
    if (raw.subarray(start, start + 2).toString() === '--') break;
    const next = raw.indexOf(sep, start);
    if (next < 0) break;
    const chunk = raw.subarray(start + 2, next - 2); // drop the CRLF after the boundary and before the next
    const split = chunk.indexOf('\r\n\r\n');
    parts.push({ head: chunk.subarray(0, split).toString('utf8'), body: chunk.subarray(split + 4) });
    at = next;
  }
  return parts;
}

export async function startFakeTelegram(opts: { token?: string } = {}): Promise<FakeTelegram> {
  const token = opts.token ?? '123456:TEST-token';
  const updates: Array<Record<string, unknown> & { update_id: number }> = [];
  let nextUpdate = 1;
  let nextMessage = 1000;
  let acked = 0;
  /** The long poll in flight, if any. */
  let polling: ServerResponse | undefined;
  /** Every message pushed as an update, by message id (what `pushEdit` edits). */
  const inbound = new Map<number, Record<string, unknown>>();
  const waiters = new Set<() => void>();
  const failures = new Map<string, Array<{ after: number; error: TgError }>>();
  const open = new Set<ServerResponse>();

  const fake: FakeTelegram = {
    apiRoot: '',
    token,
    calls: [],
    sent: [],
    stallPolls: false,
    conflicts: 0,
    files: new Map(),
    ackedOffset: () => acked,
    push(update) {
      const u = { ...update, update_id: nextUpdate++ };
      const m = update.message as { message_id?: unknown } | undefined;
      if (m && typeof m.message_id === 'number') inbound.set(m.message_id, m as Record<string, unknown>);
      updates.push(u);
      for (const w of [...waiters]) w();
      return u;
    },
    pushText(text, o = {}) {
      const userId = o.userId ?? 111;
      const chatId = o.chatId ?? userId;
      const message_id = nextMessage++;
      const entities = commandEntities(text);
      const u = fake.push({
        message: {
          message_id,
          date: o.date ?? Math.floor(Date.now() / 1000),
          chat: { id: chatId, type: o.group ? 'group' : 'private' },
          from: { id: userId, is_bot: false, first_name: `User${userId}` },
          text,
          ...(entities ? { entities } : {}),
          ...(o.replyToBot ? { reply_to_message: { message_id: 1, from: BOT, chat: { id: chatId, type: 'group' }, date: 0 } } : {}),
        },
      });
      return { update_id: u.update_id, message_id };
    },
    pushEdit(messageId, text, o = {}) {
      const before = inbound.get(messageId);
      if (!before) throw new Error(`fake Telegram: no message ${messageId} was pushed to edit`);
      const edit_date = o.editDate ?? Math.floor(Date.now() / 1000);
      const { entities: _old, ...rest } = before;
      // A photo's or a document's edit is of its caption; anything else's of its text.
      const field = before.caption !== undefined && before.text === undefined ? 'caption' : 'text';
      const entities = field === 'text' ? commandEntities(text) : undefined;
      const u = fake.push({ edited_message: { ...rest, [field]: text, ...(entities ? { entities } : {}), edit_date } });
      return { update_id: u.update_id, edit_date };
    },
    failNext(method, error, count = 1, after = 0) {
      const list = failures.get(method) ?? [];
      for (let i = 0; i < count; i++) list.push({ after: i === 0 ? after : 0, error });
      failures.set(method, list);
    },
    callsOf: (m) => fake.calls.filter((c) => c.method === m),
    async close() {
      for (const r of open) r.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };

  const reply = (res: ServerResponse, status: number, body: unknown) => {
    open.delete(res);
    if (res.destroyed) return;
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const error = (res: ServerResponse, e: TgError) =>
    reply(res, e.code, {
      ok: false,
      error_code: e.code,
      description: e.description,
      ...(e.retryAfter !== undefined ? { parameters: { retry_after: e.retryAfter } } : {}),
    });

  const record = (chatId: unknown, kind: TgMessage['kind'], extra: Partial<TgMessage> = {}) => {
    const m: TgMessage = {
      message_id: nextMessage++,
      chat: { id: Number(chatId), type: Number(chatId) < 0 ? 'group' : 'private' },
      kind,
      ...extra,
    };
    fake.sent.push(m);
    return {
      message_id: m.message_id,
      date: Math.floor(Date.now() / 1000),
      chat: m.chat,
      ...(m.text !== undefined ? { text: m.text } : {}),
    };
  };

  async function parse(req: IncomingMessage): Promise<{ params: Record<string, any>; files: TgCall['files'] }> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const type = String(req.headers['content-type'] ?? '');
    if (type.startsWith('multipart/form-data')) {
      const boundary = /boundary="?([^";]+)"?/.exec(type)?.[1];
      if (!boundary) throw new Error('multipart without boundary');
      const params: Record<string, any> = {};
      const files: TgCall['files'] = {};
      for (const part of splitMultipart(raw, boundary)) {
        const name = /[^e]name="?([^";\r\n]*)"?/.exec(part.head)?.[1] ?? '';
        const filename = /filename="?([^";\r\n]*)"?/.exec(part.head)?.[1];
        if (filename !== undefined) files[name] = { name: filename, size: part.body.length };
        else {
          const v = part.body.toString('utf8');
          params[name] = /^[[{]/.test(v) ? JSON.parse(v) : v;
        }
      }
      // grammy sends an uploaded file as "attach://<name>" in the field and the bytes under that name.
      for (const [k, v] of Object.entries(params))
        if (typeof v === 'string' && v.startsWith('attach://') && files[v.slice(9)]) files[k] = files[v.slice(9)]!;
      return { params, files };
    }
    if (!raw.length) return { params: {}, files: {} };
    return { params: JSON.parse(raw.toString('utf8')), files: {} };
  }

  async function getUpdates(res: ServerResponse, p: Record<string, any>) {
    // As Telegram does: a second poller terminates the long poll in flight with 409 Conflict.
    if (polling && !polling.writableEnded) {
      fake.conflicts++;
      reply(polling, 409, {
        ok: false,
        error_code: 409,
        description: 'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running',
      });
    }
    polling = res;
    res.on('close', () => {
      if (polling === res) polling = undefined;
    });
    const offset = Number(p.offset ?? 0);
    if (offset > acked) acked = offset;
    while (updates.length && updates[0]!.update_id < offset) updates.shift();
    if (fake.stallPolls) return; // never answered: the socket stays open until the client gives up
    const ready = () => updates.filter((u) => u.update_id >= offset).slice(0, Number(p.limit ?? 100));
    let got = ready();
    if (!got.length && Number(p.timeout ?? 0) > 0) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, Number(p.timeout) * 1000);
        function done() {
          clearTimeout(t);
          waiters.delete(done);
          resolve();
        }
        waiters.add(done);
        res.on('close', done);
      });
      if (fake.stallPolls || res.writableEnded) return;
      got = ready();
    }
    reply(res, 200, { ok: true, result: got });
  }

  const server = createServer(async (req, res) => {
    open.add(res);
    res.on('close', () => open.delete(res));
    const url = new URL(req.url ?? '/', 'http://fake');
    const file = url.pathname.match(/^\/file\/bot([^/]+)\/(.+)$/);
    if (file) {
      const body = file[1] === token ? fake.files.get(decodeURIComponent(file[2]!)) : undefined;
      if (!body) return reply(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
      open.delete(res);
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      return res.end(body);
    }
    const m = url.pathname.match(/^\/bot([^/]+)\/(\w+)$/);
    if (!m) return reply(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
    const [, tok, method] = m as unknown as [string, string, string];
    let parsed: Awaited<ReturnType<typeof parse>>;
    try {
      parsed = await parse(req);
    } catch (e) {
      return reply(res, 400, { ok: false, error_code: 400, description: `Bad Request: ${String(e)}` });
    }
    const { params: p, files } = parsed;
    const call = { method, params: p, files };
    fake.calls.push(call);
    if (fake.onCall?.(call) === 'hold') return;
    if (tok !== token) return error(res, { code: 401, description: 'Unauthorized' });
    const pending = failures.get(method);
    if (pending?.length) {
      if (pending[0]!.after > 0) pending[0]!.after--;
      else return error(res, pending.shift()!.error);
    }
    switch (method) {
      case 'getMe':
        return reply(res, 200, { ok: true, result: BOT });
      case 'getUpdates':
        return getUpdates(res, p);
      case 'deleteWebhook':
      case 'setMyCommands':
      case 'sendChatAction':
      case 'setMessageReaction':
      case 'pinChatMessage':
      case 'answerCallbackQuery':
      case 'deleteMessage':
        return reply(res, 200, { ok: true, result: true });
      case 'sendMessage': {
        if (p.parse_mode === 'HTML' && /<(?!\/?(b|i|s|u|code|pre|a|blockquote)[\s>])/.test(String(p.text))) {
          return error(res, { code: 400, description: "Bad Request: can't parse entities: Unsupported start tag" });
        }
        if (String(p.text ?? '').length > 4096) return error(res, { code: 400, description: 'Bad Request: message is too long' });
        return reply(res, 200, {
          ok: true,
          result: record(p.chat_id, 'text', {
            text: p.text,
            ...(p.parse_mode ? { parse_mode: p.parse_mode } : {}),
            ...(p.reply_markup ? { reply_markup: p.reply_markup } : {}),
          }),
        });
      }
      case 'editMessageText': {
        const target = fake.sent.find((s) => s.message_id === Number(p.message_id) && s.chat.id === Number(p.chat_id));
        if (!target) return error(res, { code: 400, description: 'Bad Request: message to edit not found' });
        target.text = p.text;
        // As Telegram: an edit without reply_markup takes the inline keyboard off the message.
        if (p.reply_markup) target.reply_markup = typeof p.reply_markup === 'string' ? JSON.parse(p.reply_markup) : p.reply_markup;
        else delete target.reply_markup;
        return reply(res, 200, { ok: true, result: { message_id: target.message_id, chat: target.chat, date: 0, text: p.text } });
      }
      case 'sendPoll':
        return reply(res, 200, { ok: true, result: record(p.chat_id, 'poll', { text: p.question }) });
      case 'sendPhoto':
      case 'sendDocument':
      case 'sendVoice':
      case 'sendAudio': {
        const field = method.slice(4).toLowerCase();
        if (!files[field]) return error(res, { code: 400, description: `Bad Request: there is no ${field} in the request` });
        return reply(res, 200, {
          ok: true,
          result: record(p.chat_id, field as TgMessage['kind'], { ...(p.caption ? { text: p.caption } : {}) }),
        });
      }
      case 'getFile': {
        if (!fake.files.has(String(p.file_id))) return error(res, { code: 400, description: 'Bad Request: invalid file_id' });
        return reply(res, 200, {
          ok: true,
          result: {
            file_id: p.file_id,
            file_unique_id: `u${p.file_id}`,
            file_size: fake.files.get(String(p.file_id))!.length,
            file_path: String(p.file_id),
          },
        });
      }
      default:
        return error(res, { code: 404, description: 'Not Found: method not found' });
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  fake.apiRoot = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
