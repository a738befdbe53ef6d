/**
 * A loopback Slack (127.0.0.1, port 0) for the real Bolt / @slack/web-api / @slack/socket-mode: the Web API as
 * `POST /api/<method>` (form-encoded or JSON bodies, Bearer tokens, Slack-shaped `{ ok: false, error }` answers and
 * HTTP 429 with `Retry-After`), the external upload URL of files.uploadV2, and the Socket Mode WebSocket that
 * apps.connections.open points at: `hello` with `num_connections` and `debug_info`, `events_api` and
 * `slash_commands` envelopes acknowledged by `envelope_id`, `disconnect` (refresh_requested / warning), pings.
 *
 * As Slack does, an envelope not acknowledged stays owed: it is sent again on the next connection (with
 * `retry_attempt` + 1). The fake counts what it saw so tests can prove "no event lost, no message twice".
 *
 * Every message it knows (pushed, or posted by the bot with its `bot_id`) is also in the conversation's history,
 * read with `conversations.history` as Slack answers it (newest first, `oldest`/`latest`/`inclusive`/`limit`/`cursor`,
 * thread replies left out except broadcasts), and each thread with `conversations.replies` (the parent first, then
 * its replies oldest first, `oldest`/`latest`/`inclusive`/`limit`/`cursor`); `historyOnly` pushes a message Slack
 * never sends down the socket, and
 * `deaf` keeps hello, pings and pongs going while it withholds every envelope. Message ts follow the wall clock
 * (`<seconds>.<microseconds>`, increasing), as Slack's do. `editMessage`, `unfurlMessage` and `deleteMessage` change
 * a message in the history and send the `message_changed` / `message_deleted` events Slack sends for them.
 * Block Kit `blocks` on chat.postMessage / chat.update (checked as Slack checks buttons; `blocks: []` takes them
 * off), `pushBlockAction` (an `interactive` envelope with a `block_actions` payload) and chat.postEphemeral.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { splitMultipart } from './telegram-server.js';

export interface SlackCall {
  method: string;
  params: Record<string, any>;
  token: string;
}

export interface SlackPosted {
  ts: string;
  channel: string;
  text: string;
  thread_ts?: string;
  /** How many times chat.update changed it. */
  edits: number;
  deleted?: boolean;
  /** Block Kit blocks it carries (chat.update with `blocks: []` takes them off; without `blocks` they stay). */
  blocks?: Array<Record<string, any>>;
}

/** A file in a pushed message: `status` other than 200 makes its private URL fail with that status. */
export interface SlackFakeFile {
  name: string;
  data: Buffer;
  mimetype?: string;
  status?: number;
  /** The size the event announces (default: the real length). */
  size?: number;
}

export type SlackFailure = { error: string } | { status: 429; retryAfter: number };

interface Envelope {
  envelope_id: string;
  type: string;
  payload: Record<string, unknown>;
  accepts_response_payload: boolean;
  retry_attempt: number;
  retry_reason: string;
}

export interface FakeSlack {
  /** Web API base for `clientOptions.slackApiUrl` (ends with /api/). */
  apiUrl: string;
  botToken: string;
  appToken: string;
  botUserId: string;
  calls: SlackCall[];
  /** Every message chat.postMessage accepted, in order. */
  posted: SlackPosted[];
  /** Every file upload completed: channel, thread, title, bytes. */
  uploads: Array<{ channel: string; thread_ts?: string; title: string; bytes: number; comment?: string }>;
  reactions: Array<{ channel: string; timestamp: string; name: string }>;
  /** Envelope ids the client acknowledged, in order (repeats included). */
  acked: string[];
  /** Sockets opened so far. */
  connections(): number;
  /** Sockets open now. */
  openSockets(): number;
  /** Extra connections reported in hello's num_connections (another app instance). */
  otherConnections: number;
  /** While true the socket neither pings nor answers pings (pongs), and no envelope is sent. */
  silent: boolean;
  /**
   * While true the socket says hello and pings and pongs as usual, but no envelope is sent (a "deaf" Socket Mode
   * connection). A withheld envelope stays owed: sent on the next connection that is not deaf, or by `redeliver`.
   */
  deaf: boolean;
  /** conversations.history of a channel named here answers `{ ok: false, error }` (e.g. `not_in_channel`). */
  historyErrors: Map<string, string>;
  /**
   * Scopes the bot token lacks: users.conversations asked for a type that needs one (`groups:read` for
   * private_channel, `mpim:read`, `im:read`, `channels:read` for public_channel) answers `missing_scope`, `needed`
   * naming the missing ones.
   */
  missingScopes: Set<string>;
  /** Conversations users.conversations leaves out (the bot is not a member). */
  notMember: Set<string>;
  /**
   * users.info: each user's profile `display_name` (default '' : none set, as for many people); a user named
   * in `unknownUsers` is `user_not_found`. Every user's handle is `user` + the id's last four characters in lower
   * case, and real name `Real ` + the handle. `users:read` in `missingScopes` makes it answer `missing_scope`.
   */
  displayNames: Map<string, string>;
  unknownUsers: Set<string>;
  /** conversations.replies in a channel named here answers `{ ok: false, error }` (e.g. `missing_scope`). */
  repliesErrors: Map<string, string>;
  /**
   * The most messages one conversations.history page holds, whatever `limit` asks (default 999, Slack's maximum;
   * 15 for commercial apps outside the Marketplace created after May 2025).
   */
  historyPageMax: number;
  /** A user message event; returns the envelope id and the message ts. */
  pushMessage(
    text: string,
    o?: {
      user?: string;
      channel?: string;
      channelType?: 'channel' | 'group' | 'im' | 'mpim';
      threadTs?: string;
      botId?: string;
      subtype?: string;
      /** Files shared with the message (subtype file_share), served at a private URL that needs the bot token. */
      files?: SlackFakeFile[];
      /** The message's ts (e.g. backdated); default the next ts of the clock. */
      ts?: string;
      /** Only in the history: no envelope is sent, now or later (the returned envelopeId is ''). */
      historyOnly?: boolean;
      /**
       * The events the app is subscribed to that this message raises, each in its own envelope, in this order
       * (default `['message']`). `app_mention` (for a message mentioning the bot) carries no channel_type or subtype.
       */
      events?: Array<'message' | 'app_mention'>;
    },
  ): { envelopeId: string; ts: string; envelopeIds: string[] };
  /**
   * A person edits a message the fake knows (pushed, or the bot's own): its history reads `text` from now on, and a
   * `message_changed` event goes down the socket as Slack sends it: `message` the message as it reads now with
   * `edited: { user, ts }` (`user` the author unless given, `ts` the clock's next), `previous_message` as it read
   * before, the event's own `ts` and `event_ts`. Returns the envelope id and `edited.ts`.
   */
  editMessage(channel: string, ts: string, text: string, o?: { user?: string }): { envelopeId: string; editedTs: string };
  /**
   * Slack unfurls a link in a message: a `message_changed` event whose `message` has `attachments` added and no new
   * `edited` (the text as it was; an `edited` of an earlier edit stays, as on Slack).
   */
  unfurlMessage(channel: string, ts: string): { envelopeId: string };
  /**
   * A person deletes a message: it leaves the history and a `message_deleted` event (`deleted_ts`,
   * `previous_message`) goes down the socket; a thread's first message with replies becomes a tombstone instead
   * (`message_changed` to subtype `tombstone`, "This message was deleted."), as on Slack.
   */
  deleteMessage(channel: string, ts: string): { envelopeId: string };
  /** Every request for a private file URL: path, the Authorization header it carried, the status answered. */
  fileDownloads: Array<{ path: string; authorization: string | undefined; status: number }>;
  /** Ephemeral messages (`chat.postEphemeral`): shown to `user` only, in `channel` (and thread), never in the history. */
  ephemerals: Array<{ channel: string; user: string; text: string; thread_ts?: string }>;
  /**
   * A user taps the button `actionId` of one of the bot's messages: an `interactive` envelope with the
   * `block_actions` payload Slack sends (user, channel, container with the message ts, the message with its blocks,
   * the action with its action_id, value and block_id, a trigger id of its own). Returns the envelope id and the
   * trigger id.
   */
  pushBlockAction(message: SlackPosted, actionId: string, o?: { user?: string }): { envelopeId: string; triggerId: string };
  /** A slash command envelope (e.g. `/keel` with text `status`). */
  pushCommand(command: string, text: string, o?: { user?: string; channel?: string }): { envelopeId: string };
  /** Sends an envelope again (as Slack does when it thinks the ack was lost), acknowledged or not. */
  redeliver(envelopeId: string): void;
  /** Envelopes sent but not acknowledged. */
  unacked(): number;
  /** Sends a `disconnect` message to the open sockets. */
  disconnect(reason: 'refresh_requested' | 'warning' | 'link_disabled'): void;
  /** Drops every open socket without a close handshake. */
  drop(): void;
  /** After `after` more successful calls of `method`, the next `count` calls fail. */
  failNext(method: string, failure: SlackFailure, count?: number, after?: number): void;
  /** Called before a call is handled; 'hold' leaves it unanswered and unrecorded (the platform never accepted it). */
  onCall?: ((call: SlackCall) => 'hold' | void) | undefined;
  /** Called with every acknowledgement as it arrives. */
  onAck?: ((envelopeId: string) => void) | undefined;
  callsOf(method: string): SlackCall[];
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

function parseParams(raw: Buffer, type: string): Record<string, any> {
  const text = raw.toString('utf8');
  if (type.includes('application/json')) return text ? (JSON.parse(text) as Record<string, any>) : {};
  const out: Record<string, any> = {};
  for (const [k, v] of new URLSearchParams(text)) {
    // The client JSON-encodes objects and arrays inside form fields.
    out[k] = /^[[{]/.test(v)
      ? (() => {
          try {
            return JSON.parse(v);
          } catch {
            return v;
          }
        })()
      : v;
  }
  return out;
}

/**
 * @example const slack = await startFakeSlack(); slack.pushMessage('hi', { user: 'U1' });
 */
export async function startFakeSlack(o: { pingMs?: number } = {}): Promise<FakeSlack> {
  const botToken = 'xoxb-1111-2222-fakebottoken';
  const appToken = 'xapp-1-A111-3333-fakeapptoken';
  const botUserId = 'UBOTKEEL1';
  const calls: SlackCall[] = [];
  const posted: SlackPosted[] = [];
  const ephemerals: FakeSlack['ephemerals'] = [];
  const uploads: FakeSlack['uploads'] = [];
  const reactions: FakeSlack['reactions'] = [];
  const acked: string[] = [];
  const owed = new Map<string, Envelope>();
  const all = new Map<string, Envelope>();
  const failures = new Map<string, { failure: SlackFailure; count: number; after: number }>();
  const pendingUploads = new Map<string, { filename: string; bytes: number }>();
  /** Private file URLs (path → file) of files shared in pushed messages. */
  const privateFiles = new Map<string, SlackFakeFile>();
  const fileDownloads: FakeSlack['fileDownloads'] = [];
  let seq = 0;
  let lastMicros = 0;
  let opened = 0;
  /** Slack's ts: seconds.microseconds of the clock, each one later than the one before. */
  const nextTs = () => {
    lastMicros = Math.max(Date.now() * 1000, lastMicros + 1);
    return `${Math.floor(lastMicros / 1e6)}.${String(lastMicros % 1e6).padStart(6, '0')}`;
  };
  /** A ts as a number of microseconds, for comparing. */
  const micros = (ts: string) => {
    const [sec = '0', frac = ''] = ts.split('.');
    return BigInt(sec) * 1_000_000n + BigInt(`${frac}000000`.slice(0, 6));
  };
  /** Each conversation's history (Slack's message objects, oldest first) and kind (for conversations.info). */
  const history = new Map<string, Array<Record<string, unknown>>>();
  const kinds = new Map<string, 'channel' | 'group' | 'im' | 'mpim'>();
  /** Each thread's replies (broadcasts included), oldest first, by `<channel>:<thread_ts>`. */
  const threads = new Map<string, Array<Record<string, unknown>>>();
  /**
   * Adds a message to its conversation's history as conversations.history returns it (no channel fields). A thread
   * reply is not returned there (only broadcasts are); its parent gets the thread's fields.
   */
  const remember = (channel: string, m: Record<string, unknown>) => {
    const list = history.get(channel) ?? [];
    history.set(channel, list);
    const threadTs = m.thread_ts as string | undefined;
    if (threadTs && threadTs !== m.ts) {
      const replies = threads.get(`${channel}:${threadTs}`) ?? [];
      threads.set(`${channel}:${threadTs}`, replies);
      insertByTs(replies, m);
      const parent = list.find((x) => x.ts === threadTs);
      if (parent) Object.assign(parent, { thread_ts: threadTs, reply_count: Number(parent.reply_count ?? 0) + 1, latest_reply: m.ts });
      if (m.subtype !== 'thread_broadcast') return;
    }
    insertByTs(list, m);
  };
  /** Inserts `m` where its ts puts it (oldest first): usually at the end, after one comparison. */
  const insertByTs = (list: Array<Record<string, unknown>>, m: Record<string, unknown>) => {
    const t = micros(String(m.ts));
    let i = list.length;
    while (i > 0 && micros(String(list[i - 1]!.ts)) > t) i--;
    list.splice(i, 0, m);
  };
  /**
   * The time window of a paged read (`oldest`, `latest`, `inclusive`) and where its cursor says the previous page
   * stopped (the ts of this page's first message): `keep(ts)` for a message of the window, `from` the cursor's ts.
   */
  const window = (p: Record<string, unknown>) => {
    const yes = (v: unknown) => v === true || v === 'true' || v === 1 || v === '1';
    const inclusive = yes(p.inclusive);
    const oldest = p.oldest !== undefined ? micros(String(p.oldest)) : undefined;
    const latest = p.latest !== undefined ? micros(String(p.latest)) : undefined;
    const from = p.cursor
      ? micros(
          Buffer.from(String(p.cursor), 'base64')
            .toString('utf8')
            .replace(/^next_ts:/, ''),
        )
      : undefined;
    const keep = (ts: unknown) => {
      const t = micros(String(ts));
      if (oldest !== undefined && (inclusive ? t < oldest : t <= oldest)) return false;
      return !(latest !== undefined && (inclusive ? t > latest : t >= latest));
    };
    return { keep, from };
  };
  const nextCursor = (next: Record<string, unknown> | undefined) =>
    next ? Buffer.from(`next_ts:${String(next.ts)}`).toString('base64') : '';
  const historyPage = (p: Record<string, unknown>): Record<string, unknown> => {
    const channel = String(p.channel ?? '');
    const refused = fake.historyErrors.get(channel);
    if (refused) return { ok: false, error: refused };
    const list = history.get(channel);
    if (!list) return { ok: false, error: 'channel_not_found' };
    const { keep, from } = window(p);
    const limit = Math.min(fake.historyPageMax, 999, Math.max(1, Number(p.limit ?? 100) || 100));
    // Newest first: a page goes on below where the previous one stopped.
    const all = list.filter((m) => keep(m.ts) && (from === undefined || micros(String(m.ts)) <= from)).reverse();
    const page = all.slice(0, limit);
    return {
      ok: true,
      messages: page.map((m) => ({ ...m })),
      has_more: all[limit] !== undefined,
      pin_count: 0,
      response_metadata: { next_cursor: nextCursor(all[limit]) },
    };
  };
  /**
   * conversations.replies: the parent first (on the first page, whatever `oldest` says, as Slack does), then the
   * replies after `oldest` and before `latest`, oldest first, `limit` per page (at most 1,000).
   */
  const repliesPage = (p: Record<string, unknown>): Record<string, unknown> => {
    const channel = String(p.channel ?? '');
    const refused = fake.repliesErrors.get(channel);
    if (refused) return { ok: false, error: refused };
    const list = history.get(channel);
    if (!list) return { ok: false, error: 'channel_not_found' };
    const ts = String(p.ts ?? '');
    const parent = list.find((m) => m.ts === ts);
    if (!parent) return { ok: false, error: 'thread_not_found' };
    const { keep, from } = window(p);
    const limit = Math.min(1000, Math.max(1, Number(p.limit ?? 1000) || 1000));
    // Oldest first: a page goes on from where the previous one stopped.
    const all = (threads.get(`${channel}:${ts}`) ?? []).filter((m) => keep(m.ts) && (from === undefined || micros(String(m.ts)) >= from));
    const page = all.slice(0, limit);
    return {
      ok: true,
      messages: [...(from === undefined ? [{ ...parent }] : []), ...page.map((m) => ({ ...m }))],
      has_more: all[limit] !== undefined,
      response_metadata: { next_cursor: nextCursor(all[limit]) },
    };
  };
  /** A message of the history or of a thread (as stored, so a change shows in both reads), or undefined. */
  const stored = (channel: string, ts: string): Record<string, unknown> | undefined => {
    const top = history.get(channel)?.find((m) => m.ts === ts);
    if (top) return top;
    for (const [key, replies] of threads) if (key.startsWith(`${channel}:`)) for (const m of replies) if (m.ts === ts) return m;
    return undefined;
  };
  /** Removes a message from its conversation's history and its thread. */
  const forget = (channel: string, m: Record<string, unknown>) => {
    const list = history.get(channel);
    const at = list?.indexOf(m) ?? -1;
    if (at >= 0) list!.splice(at, 1);
    const replies = m.thread_ts ? threads.get(`${channel}:${String(m.thread_ts)}`) : undefined;
    const r = replies?.indexOf(m) ?? -1;
    if (r >= 0) replies!.splice(r, 1);
  };
  /** An `events_api` envelope of one message event of `channel` (its channel_type added, as Slack does). */
  const messageEnvelope = (channel: string, event: Record<string, unknown>) => {
    const eventTs = nextTs();
    return envelope('events_api', {
      token: 'verif',
      team_id: 'T0KEEL',
      api_app_id: 'A111',
      event: {
        type: 'message',
        ...event,
        channel,
        hidden: true,
        ts: eventTs,
        event_ts: eventTs,
        channel_type: kinds.get(channel) ?? 'channel',
      },
      type: 'event_callback',
      event_id: `Ev${++seq}`,
      event_time: Math.floor(Date.now() / 1000),
    });
  };
  const sockets = new Set<WebSocket>();

  const json = (res: ServerResponse, body: unknown, status = 200, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };

  /** `blocks` as a list (the web client sends it JSON-encoded in a form body), or a Slack error code. */
  const blocksParam = (raw: unknown): Array<Record<string, any>> | undefined | { error: string } => {
    if (raw === undefined) return undefined;
    let v: unknown = raw;
    if (typeof raw === 'string') {
      try {
        v = JSON.parse(raw);
      } catch {
        return { error: 'invalid_blocks_format' };
      }
    }
    if (!Array.isArray(v) || v.length > 50) return { error: 'invalid_blocks' };
    // Slack's rules for what the bot sends: a section's text up to 3000; an actions block of 1 to 25 elements; a
    // button's label plain_text up to 75, its action_id up to 255 and unique in the message, its value up to 2000.
    const ids = new Set<string>();
    for (const b of v as Array<Record<string, any>>) {
      if (b?.type === 'section') {
        if (!b.text?.text || String(b.text.text).length > 3000) return { error: 'invalid_blocks' };
      } else if (b?.type === 'actions') {
        if (!Array.isArray(b.elements) || !b.elements.length || b.elements.length > 25) return { error: 'invalid_blocks' };
        for (const el of b.elements as Array<Record<string, any>>) {
          if (el?.type !== 'button' || el.text?.type !== 'plain_text' || !el.text.text || String(el.text.text).length > 75)
            return { error: 'invalid_blocks' };
          if (el.action_id !== undefined && (String(el.action_id).length > 255 || ids.has(el.action_id)))
            return { error: 'invalid_blocks' };
          if (el.value !== undefined && String(el.value).length > 2000) return { error: 'invalid_blocks' };
          if (el.style !== undefined && !['primary', 'danger'].includes(el.style)) return { error: 'invalid_blocks' };
          if (el.action_id !== undefined) ids.add(el.action_id);
        }
      } else return { error: 'invalid_blocks' };
    }
    return v as Array<Record<string, any>>;
  };

  const handle = (method: string, p: Record<string, any>, token: string): Record<string, unknown> => {
    const bot = token === botToken;
    switch (method) {
      case 'auth.test':
        return bot
          ? {
              ok: true,
              url: 'https://keel-test.slack.com/',
              team: 'Keel Test',
              user: 'keel',
              team_id: 'T0KEEL',
              user_id: botUserId,
              bot_id: 'BKEEL1',
            }
          : { ok: false, error: 'invalid_auth' };
      case 'apps.connections.open':
        if (token !== appToken) return { ok: false, error: token.startsWith('xapp-') ? 'invalid_auth' : 'not_allowed_token_type' };
        return { ok: true, url: `ws://127.0.0.1:${port}/link/?ticket=${++seq}&app_id=A111` };
      case 'chat.postMessage': {
        if (!bot) return { ok: false, error: 'invalid_auth' };
        if (!/^[CGD][A-Z0-9]+$/.test(String(p.channel ?? ''))) return { ok: false, error: 'channel_not_found' };
        const blocks = blocksParam(p.blocks);
        if (blocks && 'error' in blocks) return { ok: false, error: blocks.error };
        const m: SlackPosted = {
          ts: nextTs(),
          channel: String(p.channel),
          text: String(p.text ?? ''),
          edits: 0,
          ...(p.thread_ts ? { thread_ts: String(p.thread_ts) } : {}),
          ...(blocks?.length ? { blocks } : {}),
        };
        posted.push(m);
        remember(m.channel, {
          type: 'message',
          subtype: 'bot_message',
          text: m.text,
          user: botUserId,
          bot_id: 'BKEEL1',
          ts: m.ts,
          ...(m.thread_ts ? { thread_ts: m.thread_ts } : {}),
        });
        return {
          ok: true,
          channel: m.channel,
          ts: m.ts,
          message: { type: 'message', text: m.text, user: botUserId, bot_id: 'BKEEL1', ts: m.ts },
        };
      }
      case 'chat.update': {
        const m = posted.find((x) => x.ts === p.ts && x.channel === p.channel);
        if (!m) return { ok: false, error: 'message_not_found' };
        const blocks = blocksParam(p.blocks);
        if (blocks && 'error' in blocks) return { ok: false, error: blocks.error };
        m.text = String(p.text ?? '');
        if (blocks?.length) m.blocks = blocks;
        else if (blocks) delete m.blocks;
        m.edits++;
        const h = history.get(m.channel)?.find((x) => x.ts === m.ts);
        if (h) h.text = m.text;
        const r = m.thread_ts ? threads.get(`${m.channel}:${m.thread_ts}`)?.find((x) => x.ts === m.ts) : undefined;
        if (r) r.text = m.text;
        return { ok: true, channel: m.channel, ts: m.ts, text: m.text };
      }
      case 'chat.postEphemeral': {
        if (!bot) return { ok: false, error: 'invalid_auth' };
        if (!/^[CGD][A-Z0-9]+$/.test(String(p.channel ?? ''))) return { ok: false, error: 'channel_not_found' };
        if (!/^[UW][A-Z0-9]+$/.test(String(p.user ?? ''))) return { ok: false, error: 'user_not_found' };
        if (!p.text && !p.blocks) return { ok: false, error: 'no_text' };
        ephemerals.push({
          channel: String(p.channel),
          user: String(p.user),
          text: String(p.text ?? ''),
          ...(p.thread_ts ? { thread_ts: String(p.thread_ts) } : {}),
        });
        return { ok: true, message_ts: nextTs() };
      }
      case 'chat.delete': {
        const m = posted.find((x) => x.ts === p.ts && x.channel === p.channel);
        if (!m) return { ok: false, error: 'message_not_found' };
        m.deleted = true;
        const list = history.get(m.channel);
        const at = list?.findIndex((x) => x.ts === m.ts) ?? -1;
        if (at >= 0) list!.splice(at, 1);
        const replies = m.thread_ts ? threads.get(`${m.channel}:${m.thread_ts}`) : undefined;
        const r = replies?.findIndex((x) => x.ts === m.ts) ?? -1;
        if (r >= 0) replies!.splice(r, 1);
        return { ok: true, channel: m.channel, ts: m.ts };
      }
      case 'reactions.add':
        if (reactions.some((r) => r.channel === p.channel && r.timestamp === p.timestamp && r.name === p.name))
          return { ok: false, error: 'already_reacted' };
        reactions.push({ channel: String(p.channel), timestamp: String(p.timestamp), name: String(p.name) });
        return { ok: true };
      case 'files.getUploadURLExternal': {
        const id = `F${String(++seq).padStart(8, '0')}`;
        pendingUploads.set(id, { filename: String(p.filename), bytes: -1 });
        return { ok: true, upload_url: `http://127.0.0.1:${port}/upload/${id}`, file_id: id };
      }
      case 'files.completeUploadExternal': {
        const files = (Array.isArray(p.files) ? p.files : []) as Array<{ id: string; title?: string }>;
        for (const f of files) {
          const up = pendingUploads.get(f.id);
          if (!up || up.bytes < 0) return { ok: false, error: 'file_not_found' };
          uploads.push({
            channel: String(p.channel_id),
            title: f.title ?? up.filename,
            bytes: up.bytes,
            ...(p.thread_ts ? { thread_ts: String(p.thread_ts) } : {}),
            ...(p.initial_comment ? { comment: String(p.initial_comment) } : {}),
          });
        }
        return { ok: true, files: files.map((f) => ({ id: f.id, title: f.title })) };
      }
      case 'conversations.info': {
        const id = String(p.channel ?? '');
        const kind = kinds.get(id) ?? (id.startsWith('D') ? 'im' : 'channel');
        return {
          ok: true,
          channel: {
            id,
            name: 'general',
            is_channel: kind === 'channel',
            is_group: kind === 'group' || kind === 'mpim',
            is_im: kind === 'im',
            is_mpim: kind === 'mpim',
            is_private: kind !== 'channel',
          },
        };
      }
      case 'users.info': {
        if (!bot) return { ok: false, error: 'invalid_auth' };
        if (fake.missingScopes.has('users:read'))
          return { ok: false, error: 'missing_scope', needed: 'users:read', provided: 'chat:write' };
        const id = String(p.user ?? '');
        if (!/^[UW][A-Z0-9]+$/.test(id) || fake.unknownUsers.has(id)) return { ok: false, error: 'user_not_found' };
        const handle = id === botUserId ? 'keel' : `user${id.slice(-4).toLowerCase()}`;
        return {
          ok: true,
          user: {
            id,
            team_id: 'T0KEEL',
            name: handle,
            real_name: `Real ${handle}`,
            is_bot: id === botUserId,
            profile: { display_name: fake.displayNames.get(id) ?? '', real_name: `Real ${handle}` },
          },
        };
      }
      case 'users.conversations': {
        // The conversations the bot is a member of (every one the fake has a message in), of the types asked for.
        if (!bot) return { ok: false, error: 'invalid_auth' };
        const typeOf = { channel: 'public_channel', group: 'private_channel', mpim: 'mpim', im: 'im' } as const;
        const scopeOf: Record<string, string> = {
          public_channel: 'channels:read',
          private_channel: 'groups:read',
          mpim: 'mpim:read',
          im: 'im:read',
        };
        const types = String(p.types ?? 'public_channel').split(',');
        const missing = types.map((t) => scopeOf[t] ?? '').filter((x) => fake.missingScopes.has(x));
        if (missing.length) return { ok: false, error: 'missing_scope', needed: missing.join(','), provided: 'chat:write' };
        const all = [...kinds]
          .filter(([id, kind]) => types.includes(typeOf[kind]) && !fake.notMember.has(id))
          .map(([id, kind]) => {
            const newest = history.get(id)?.at(-1)?.ts;
            const created = Math.floor(Date.now() / 1000) - 86_400;
            return {
              id,
              is_channel: kind === 'channel',
              is_group: kind === 'group',
              is_im: kind === 'im',
              is_mpim: kind === 'mpim',
              is_private: kind !== 'channel',
              is_archived: false,
              created,
              updated: newest ? Math.floor(Number(newest) * 1000) : created * 1000,
              ...(kind === 'im' ? { user: 'U0ALICE01' } : { name: id.toLowerCase() }),
            };
          });
        const from = p.cursor
          ? Number(
              Buffer.from(String(p.cursor), 'base64')
                .toString('utf8')
                .replace(/^offset:/, ''),
            )
          : 0;
        const limit = Math.min(1000, Math.max(1, Number(p.limit ?? 100) || 100));
        const page = all.slice(from, from + limit);
        const next = from + limit < all.length ? Buffer.from(`offset:${from + limit}`).toString('base64') : '';
        return { ok: true, channels: page, response_metadata: { next_cursor: next } };
      }
      case 'conversations.history':
        if (!bot) return { ok: false, error: 'invalid_auth' };
        return historyPage(p);
      case 'conversations.replies':
        if (!bot) return { ok: false, error: 'invalid_auth' };
        return repliesPage(p);
      default:
        return { ok: false, error: 'unknown_method' };
    }
  };

  const server = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? '/', 'http://x');
      const raw = await readBody(req);
      const pf = privateFiles.get(url.pathname);
      if (pf && req.method === 'GET') {
        // As files.slack.com: the bot token as a Bearer header, or nothing.
        const authorization = req.headers.authorization;
        const status = authorization !== `Bearer ${botToken}` ? 401 : (pf.status ?? 200);
        fileDownloads.push({ path: url.pathname, authorization, status });
        if (status !== 200) return json(res, { ok: false, error: status === 401 ? 'not_authed' : 'file_not_found' }, status);
        res.writeHead(200, { 'content-type': pf.mimetype ?? 'application/octet-stream', 'content-length': String(pf.data.length) });
        return res.end(pf.data);
      }
      const up = /^\/upload\/(F\d+)$/.exec(url.pathname);
      if (up) {
        const entry = pendingUploads.get(up[1]!);
        if (!entry) return json(res, { ok: false }, 404);
        // The client posts the bytes raw or as a multipart form with one file part.
        const boundary = /boundary=([^;]+)/.exec(String(req.headers['content-type'] ?? ''))?.[1];
        const file = boundary ? splitMultipart(raw, boundary.replace(/^"|"$/g, '')).find((x) => /filename=/.test(x.head)) : undefined;
        entry.bytes = file ? file.body.length : raw.length;
        res.writeHead(200, { 'content-type': 'text/plain' });
        return res.end(`OK - ${raw.length}`);
      }
      const m = /^\/api\/([\w.]+)$/.exec(url.pathname);
      if (!m) return json(res, { ok: false, error: 'not_found' }, 404);
      const method = m[1]!;
      const params = parseParams(raw, String(req.headers['content-type'] ?? ''));
      const token = String(req.headers.authorization ?? '').replace(/^Bearer\s+/i, '') || String(params.token ?? '');
      const call: SlackCall = { method, params, token };
      if (fake.onCall?.(call) === 'hold') return; // never answered
      calls.push(call);
      const f = failures.get(method);
      if (f) {
        if (f.after > 0) f.after--;
        else if (f.count > 0) {
          f.count--;
          if ('status' in f.failure)
            return json(res, { ok: false, error: 'ratelimited' }, 429, { 'retry-after': String(f.failure.retryAfter) });
          return json(res, { ok: false, error: f.failure.error });
        }
      }
      return json(res, handle(method, params, token));
    } catch (e) {
      json(res, { ok: false, error: 'internal_error', detail: String(e) }, 500);
    }
  });

  const wss = new WebSocketServer({ noServer: true, autoPong: false });
  server.on('upgrade', (req, socket, head) => {
    if (!(req.url ?? '').startsWith('/link/')) return socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
  });
  const deliver = (ws: WebSocket, e: Envelope) => {
    if (ws.readyState === WebSocket.OPEN && !fake.silent && !fake.deaf) ws.send(JSON.stringify(e));
  };
  const broadcast = (e: Envelope) => {
    // Slack sends an envelope to one of the app's connections.
    const ws = [...sockets].at(-1);
    if (ws) deliver(ws, e);
  };
  wss.on('connection', (ws) => {
    opened++;
    sockets.add(ws);
    ws.on('ping', (data) => {
      if (!fake.silent) ws.pong(data);
    });
    const pinger = setInterval(() => {
      if (!fake.silent && ws.readyState === WebSocket.OPEN) ws.ping('keepalive');
    }, o.pingMs ?? 1000);
    ws.on('close', () => {
      clearInterval(pinger);
      sockets.delete(ws);
    });
    ws.on('message', (data) => {
      try {
        const msg = JSON.parse(String(data)) as { envelope_id?: string };
        if (msg.envelope_id) {
          acked.push(msg.envelope_id);
          fake.onAck?.(msg.envelope_id);
          owed.delete(msg.envelope_id);
        }
      } catch {
        // not JSON: ignored, as Slack does
      }
    });
    ws.send(
      JSON.stringify({
        type: 'hello',
        num_connections: sockets.size + fake.otherConnections,
        debug_info: { host: 'applink-fake-1', build_number: 42, approximate_connection_time: 18060 },
        connection_info: { app_id: 'A111' },
      }),
    );
    // What is owed from before (unacknowledged on an earlier connection) comes again.
    for (const e of owed.values()) {
      e.retry_attempt++;
      e.retry_reason = 'timeout';
      deliver(ws, e);
    }
  });

  const envelope = (type: string, payload: Record<string, unknown>, accepts = false): Envelope => {
    const e: Envelope = {
      envelope_id: `env-${++seq}-${Math.random().toString(36).slice(2, 8)}`,
      type,
      payload,
      accepts_response_payload: accepts,
      retry_attempt: 0,
      retry_reason: '',
    };
    owed.set(e.envelope_id, e);
    all.set(e.envelope_id, e);
    broadcast(e);
    return e;
  };

  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;

  const fake: FakeSlack = {
    apiUrl: `http://127.0.0.1:${port}/api/`,
    botToken,
    appToken,
    botUserId,
    calls,
    posted,
    uploads,
    reactions,
    acked,
    fileDownloads,
    otherConnections: 0,
    silent: false,
    deaf: false,
    historyErrors: new Map(),
    missingScopes: new Set(),
    displayNames: new Map(),
    unknownUsers: new Set(),
    notMember: new Set(),
    repliesErrors: new Map(),
    historyPageMax: 999,
    connections: () => opened,
    openSockets: () => sockets.size,
    pushMessage(text, m = {}) {
      const ts = m.ts ?? nextTs();
      const channelType = m.channelType ?? 'channel';
      const channel =
        m.channel ?? (channelType === 'im' ? 'D0DIRECT1' : channelType === 'group' || channelType === 'mpim' ? 'G0PRIVATE1' : 'C0GENERAL1');
      kinds.set(channel, channelType);
      const event: Record<string, unknown> = {
        type: 'message',
        channel,
        channel_type: channelType,
        text,
        ts,
        event_ts: ts,
        ...(m.botId ? { bot_id: m.botId, subtype: m.subtype ?? 'bot_message' } : { user: m.user ?? 'U0ALICE01' }),
        ...(m.subtype && !m.botId ? { subtype: m.subtype } : {}),
        ...(m.threadTs ? { thread_ts: m.threadTs } : {}),
      };
      if (m.files?.length) {
        event.subtype = 'file_share';
        event.files = m.files.map((f) => {
          const id = `F${String(++seq).padStart(8, '0')}`;
          const path = `/files-pri/T0KEEL-${id}/download/${encodeURIComponent(f.name)}`;
          privateFiles.set(path, f);
          return {
            id,
            name: f.name,
            title: f.name,
            mimetype: f.mimetype ?? 'application/octet-stream',
            size: f.size ?? f.data.length,
            mode: 'hosted',
            url_private: `http://127.0.0.1:${port}/files-pri/T0KEEL-${id}/${encodeURIComponent(f.name)}`,
            url_private_download: `http://127.0.0.1:${port}${path}`,
          };
        });
      }
      const { channel: _c, channel_type: _t, event_ts: _e, ...stored } = event;
      remember(channel, stored);
      if (m.historyOnly) return { envelopeId: '', ts, envelopeIds: [] };
      const mention = {
        type: 'app_mention',
        user: event.user,
        text,
        ts,
        channel,
        event_ts: ts,
        ...(m.threadTs ? { thread_ts: m.threadTs } : {}),
      };
      const ids = (m.events ?? ['message']).map(
        (kind) =>
          envelope('events_api', {
            token: 'verif',
            team_id: 'T0KEEL',
            api_app_id: 'A111',
            event: kind === 'message' ? event : mention,
            type: 'event_callback',
            event_id: `Ev${++seq}`,
            event_time: Math.floor(Date.now() / 1000),
          }).envelope_id,
      );
      return { envelopeId: ids[0] ?? '', ts, envelopeIds: ids };
    },
    editMessage(channel, ts, text, o = {}) {
      const m = stored(channel, ts);
      if (!m) throw new Error(`no message ${channel}:${ts}`);
      const previous = { ...m };
      const editedTs = nextTs();
      Object.assign(m, { text, edited: { user: o.user ?? String(m.user ?? ''), ts: editedTs } });
      const p = posted.find((x) => x.channel === channel && x.ts === ts);
      if (p) p.text = text;
      const e = messageEnvelope(channel, { subtype: 'message_changed', message: { ...m }, previous_message: previous });
      return { envelopeId: e.envelope_id, editedTs };
    },
    unfurlMessage(channel, ts) {
      const m = stored(channel, ts);
      if (!m) throw new Error(`no message ${channel}:${ts}`);
      const previous = { ...m };
      m.attachments = [{ id: 1, from_url: 'https://example.com/', title: 'Example Domain', fallback: 'Example Domain' }];
      const e = messageEnvelope(channel, { subtype: 'message_changed', message: { ...m }, previous_message: previous });
      return { envelopeId: e.envelope_id };
    },
    deleteMessage(channel, ts) {
      const m = stored(channel, ts);
      if (!m) throw new Error(`no message ${channel}:${ts}`);
      const previous = { ...m };
      if (Number(m.reply_count ?? 0) > 0) {
        // A thread's first message with replies stays as a tombstone, so its thread can still be read.
        for (const k of Object.keys(m)) if (!['ts', 'thread_ts', 'reply_count', 'latest_reply'].includes(k)) delete m[k];
        Object.assign(m, { type: 'message', subtype: 'tombstone', text: 'This message was deleted.', user: 'USLACKBOT', hidden: true });
        const e = messageEnvelope(channel, { subtype: 'message_changed', message: { ...m }, previous_message: previous });
        return { envelopeId: e.envelope_id };
      }
      forget(channel, m);
      const p = posted.find((x) => x.channel === channel && x.ts === ts);
      if (p) p.deleted = true;
      const e = messageEnvelope(channel, { subtype: 'message_deleted', deleted_ts: ts, previous_message: previous });
      return { envelopeId: e.envelope_id };
    },
    ephemerals,
    pushBlockAction(message, actionId, m = {}) {
      const action = (message.blocks ?? [])
        .flatMap((b) => (b.type === 'actions' ? (b.elements as Array<Record<string, any>>).map((el) => ({ el, blockId: b.block_id })) : []))
        .find((x) => x.el.action_id === actionId);
      if (!action) throw new Error(`pushBlockAction: message ${message.ts} has no button ${actionId}`);
      const user = m.user ?? 'U0ALICE01';
      const triggerId = `trig-${++seq}`;
      const e = envelope(
        'interactive',
        {
          type: 'block_actions',
          user: {
            id: user,
            username: `user${user.slice(-4).toLowerCase()}`,
            name: `user${user.slice(-4).toLowerCase()}`,
            team_id: 'T0KEEL',
          },
          api_app_id: 'A111',
          token: 'verif',
          container: {
            type: 'message',
            message_ts: message.ts,
            channel_id: message.channel,
            is_ephemeral: false,
            ...(message.thread_ts ? { thread_ts: message.thread_ts } : {}),
          },
          trigger_id: triggerId,
          team: { id: 'T0KEEL', domain: 'keel-test' },
          enterprise: null,
          is_enterprise_install: false,
          channel: { id: message.channel, name: 'general' },
          message: {
            type: 'message',
            user: botUserId,
            bot_id: 'BKEEL1',
            text: message.text,
            ts: message.ts,
            ...(message.thread_ts ? { thread_ts: message.thread_ts } : {}),
            blocks: message.blocks,
          },
          state: { values: {} },
          response_url: `http://127.0.0.1:${port}/respond`,
          actions: [
            {
              action_id: actionId,
              block_id: action.blockId ?? 'b1',
              text: action.el.text,
              ...(action.el.value !== undefined ? { value: action.el.value } : {}),
              ...(action.el.style ? { style: action.el.style } : {}),
              type: 'button',
              action_ts: nextTs(),
            },
          ],
        },
        false,
      );
      return { envelopeId: e.envelope_id, triggerId };
    },
    pushCommand(command, text, m = {}) {
      const e = envelope(
        'slash_commands',
        {
          token: 'verif',
          team_id: 'T0KEEL',
          channel_id: m.channel ?? 'C0GENERAL1',
          user_id: m.user ?? 'U0ALICE01',
          user_name: 'alice',
          command,
          text,
          response_url: `http://127.0.0.1:${port}/respond`,
          trigger_id: `trig-${seq}`,
        },
        true,
      );
      return { envelopeId: e.envelope_id };
    },
    unacked: () => owed.size,
    redeliver(envelopeId) {
      const e = all.get(envelopeId);
      if (!e) throw new Error(`no envelope ${envelopeId}`);
      e.retry_attempt++;
      e.retry_reason = 'timeout';
      owed.set(e.envelope_id, e);
      broadcast(e);
    },
    disconnect(reason) {
      for (const ws of sockets) ws.send(JSON.stringify({ type: 'disconnect', reason, debug_info: { host: 'applink-fake-1' } }));
    },
    drop() {
      for (const ws of sockets) ws.terminate();
    },
    failNext(method, failure, count = 1, after = 0) {
      failures.set(method, { failure, count, after });
    },
    callsOf: (method) => calls.filter((c) => c.method === method),
    async close() {
      for (const ws of sockets) ws.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  return fake;
}
