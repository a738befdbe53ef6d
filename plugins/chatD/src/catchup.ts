/**
 * Catch-up from the conversation history. Slack sends an unacknowledged Socket Mode envelope again on the next
 * connection, but only a few times; and a connection can stay open, answering pings, while Slack delivers no events
 * over it (a "deaf" socket). So each conversation the bot has heard from keeps a history cursor (`last:<channel>`,
 * the newest message ts recorded, or read from the history, there; written in the ingress transaction of the
 * record), and its history after that cursor (`conversations.history`) is read and recorded like socket messages;
 * the ingress drops what it has:
 *
 * - after every connection's `hello`, every conversation with a cursor (its live messages wait meanwhile, so that a
 *   conversation's messages are still recorded, and handled, in order);
 * - every `chatDCatchUpInterval` seconds, the 50 most recently active conversations of the last 7 days. A message
 *   such a sweep records that is older than a minute, in a conversation this connection was following, is one the
 *   socket should have delivered and did not: the connection is rebuilt (with one warning).
 *
 * A conversation whose history is still to be read on this connection is "behind": its live messages are recorded
 * without moving its cursor (so a failed read is tried again from where it was, not from after them), and the pages
 * a read got before it failed (a rate limit) are kept, the next read going on below them.
 *
 * Threads: `conversations.history` holds their parents (and broadcasts), not their replies. A thread's replies are read
 * with `conversations.replies` after a cursor of its own (`thr:<channel>:<thread ts>`, the newest reply recorded
 * there, moved with the live replies too) as part of its conversation's read: the threads with a cursor active in the
 * last 7 days, and every thread whose parent the read found with replies newer than that; at most 50 threads a round,
 * the most recently active first. The replies are recorded in the same transaction as the conversation's messages,
 * in ts order. A thread nothing of which was recorded yet, under a message older than the conversation's cursor, is
 * not found (that would take a call per message).
 *
 * Conversations Keel never heard from (a person's first direct message to the bot, a channel it was invited to) have
 * no cursor. Keel notes when it was last connected (the kit's `alive` mark); at the first hello after a start, and at
 * a hello that ends more than two minutes without a connection, the conversations the bot is a member of are listed
 * (`users.conversations`, public and private channels, group and direct messages, as far as the token's scopes
 * allow: `channels:read`, and for the others `groups:read`, `mpim:read`, `im:read`) and each one without a cursor
 * (at most 50, the most recently updated first) is read like the others from that time, less a minute. Their live
 * messages wait for the read from the moment the list is in.
 */
import { ErrorCode, type WebClient } from '@slack/web-api';
import {
  type CatchUpAdapter,
  type CatchUpContext,
  type CatchUpNewcomers,
  type CatchUpSummary,
  type ChannelStore,
  HISTORY_CALL_TIMEOUT_MS,
  HistoryCatchUp,
  historyCursorKey,
  SWEEP_ACTIVE_MS,
} from '../../../sdk/channel-kit/index.js';
import { bounded, errorMessage, type Logger } from '../../../sdk/index.js';
import type { SlackFile } from './files.js';
import type { SlackMessageEvent } from './inbound.js';
import { slackErrorCode } from './slack.js';

/** Messages per `conversations.history` page. */
const PAGE = 100;
/** At most this many messages of one conversation per catch-up (the newest ones after the cursor). */
export const MAX_PER_CONVERSATION = 500;
/** A Retry-After longer than this ends the round at once instead of being waited for. */
const MAX_RETRY_AFTER_S = 60;

/** The kv key of a conversation's history cursor. */
export const cursorKey = historyCursorKey;

const THREAD_PREFIX = 'thr:';
/** The kv key of a thread's cursor (the newest reply recorded in it). */
export const threadKey = (channel: string, threadTs: string) => `${THREAD_PREFIX}${channel}:${threadTs}`;
/** At most this many threads are read in one round (connect or sweep), the most recently active first. */
export const THREADS_PER_ROUND = 50;
/** Replies per `conversations.replies` page. */
const REPLIES_PAGE = 200;
/** At most this many replies of one thread per catch-up (the oldest after its cursor: the next one goes on). */
export const MAX_PER_THREAD = 500;

/** At most this many conversations without a cursor are read after a start (the most recently updated first). */
export const MAX_NEW_CONVERSATIONS = 50;
/** A hello this long after the last `alive` mark (a gap, not a routine reconnect) looks for new conversations too. */
export const NEWCOMER_GAP_MS = 120_000;
/** users.conversations: conversations per page, and at most this many pages (2,000 conversations). */
const LIST_PAGE = 200;
const LIST_PAGES = 10;
/** Each conversation type users.conversations lists, and the scope it needs. */
const TYPE_SCOPES: Array<[string, string]> = [
  ['public_channel', 'channels:read'],
  ['private_channel', 'groups:read'],
  ['mpim', 'mpim:read'],
  ['im', 'im:read'],
];

/** What each conversation type is called in a log line. */
const TYPE_WORDS: Record<string, string> = {
  public_channel: 'public channels',
  private_channel: 'private channels',
  mpim: 'group direct messages',
  im: 'direct messages',
};

/** A conversation as users.conversations lists it (what chatD reads of it). */
interface ListedConversation {
  id?: string;
  is_im?: boolean;
  is_mpim?: boolean;
  is_private?: boolean;
  is_archived?: boolean;
  is_user_deleted?: boolean;
  /** Epoch ms of the conversation's last update. */
  updated?: number;
  /** Epoch seconds of its creation. */
  created?: number;
}

/** The least ts of epoch millisecond `ms` (a message written then or later has a ts after it). */
export const tsAt = (ms: number) => `${Math.max(0, Math.floor(ms / 1000))}.000000`;

/** A Slack ts (`"1700000000.000100"`) as microseconds, or undefined when it is not one. */
function micros(ts: string): bigint | undefined {
  const m = /^(\d{1,12})(?:\.(\d{1,6}))?$/.exec(ts);
  return m ? BigInt(m[1]!) * 1_000_000n + BigInt((m[2] ?? '').padEnd(6, '0')) : undefined;
}

/**
 * The newer of two Slack ts (`"seconds.micro"`), compared as numbers, not as strings; undefined (no cursor yet) and
 * a malformed value count as oldest.
 * @example newerTs('1700000000.000100', '1700000000.000099') // '1700000000.000100'
 */
export function newerTs(a: string | undefined, b: string): string {
  const x = a === undefined ? undefined : micros(a);
  const y = micros(b);
  if (y === undefined) return a ?? b;
  return x === undefined || y > x ? b : a!;
}

/** Epoch milliseconds of a Slack ts. */
export const tsMs = (ts: string) => Number(ts) * 1000;

/** A message as `conversations.history` returns it (what chatD reads of it). */
interface HistoryMessage {
  type?: string;
  user?: string;
  text?: string;
  ts?: string;
  thread_ts?: string;
  bot_id?: string;
  subtype?: string;
  files?: SlackFile[];
  /** On a thread's parent: how many replies, and the newest one's ts. */
  reply_count?: number;
  latest_reply?: string;
}

type ChannelType = NonNullable<SlackMessageEvent['channel_type']>;

/** A history message as the message event the socket would have carried. */
export function historyEvent(channel: string, channelType: ChannelType, m: HistoryMessage): SlackMessageEvent | undefined {
  if (!m.ts) return undefined;
  // In the history a thread's parent carries thread_ts (its own ts); its live event did not, and it is answered in
  // the conversation, not in its thread. A broadcast reply keeps its thread.
  const thread = m.thread_ts && m.thread_ts !== m.ts ? m.thread_ts : undefined;
  return {
    type: 'message',
    channel,
    channel_type: channelType,
    ts: m.ts,
    ...(m.user ? { user: m.user } : {}),
    ...(m.text !== undefined ? { text: m.text } : {}),
    ...(thread ? { thread_ts: thread } : {}),
    ...(m.bot_id ? { bot_id: m.bot_id } : {}),
    ...(m.subtype ? { subtype: m.subtype } : {}),
    ...(m.files?.length ? { files: m.files } : {}),
  };
}

/** The Slack error code of a failed call, for a log line: never the token, never the whole request. */
function codeOf(e: unknown): string {
  const x = e as { code?: string; statusCode?: number; name?: string } | undefined;
  if (x?.code === ErrorCode.RateLimitedError) return 'ratelimited';
  const code = slackErrorCode(e);
  if (code) return code;
  if (x?.code === ErrorCode.HTTPError) return `HTTP ${x.statusCode ?? '?'}`;
  if (x?.name === 'TimeoutError') return 'no answer in time';
  return errorMessage(e)
    .replace(/\b(xox[a-z]|xapp)-[A-Za-z0-9-]+/g, '[token]')
    .slice(0, 200);
}

/** Seconds Slack asked to wait, when `e` is a rate limit (HTTP 429, or `ratelimited`). */
function retryAfter(e: unknown): number | undefined {
  const x = e as { code?: string; retryAfter?: number } | undefined;
  if (x?.code === ErrorCode.RateLimitedError) return Math.max(1, Number(x.retryAfter ?? 1));
  return slackErrorCode(e) === 'ratelimited' ? 1 : undefined;
}

export interface CatchUpOptions {
  /** The bot's WebClient (calls go to `chatDApiUrl`). */
  client: WebClient;
  store: ChannelStore;
  log: Logger;
  /** Aborted when the channel stops. */
  signal: AbortSignal;
  /**
   * Records one conversation's messages (its own and its threads', oldest first) and moves each cursor `key` (the
   * conversation's, a thread's) to its `newest` (the newest ts read there, which may be a message the filter drops)
   * in one ingress transaction; returns the messages that were new.
   */
  record(channel: string, events: SlackMessageEvent[], cursors: Array<{ key: string; newest: string }>): SlackMessageEvent[];
  /** Rebuilds the connection (the supervisor's `restart`). */
  rebuild(reason: string): void;
  /** Whether the connection is up now. */
  connected(): boolean;
  /** Seconds between periodic sweeps, asked before each wait (0: none). */
  interval(): number;
}

/** Slack's side of the kit's catch-up: the Web API calls, ts cursors, threads, conversation kinds, newcomers. */
class SlackHistory implements CatchUpAdapter<HistoryMessage, SlackMessageEvent> {
  readonly name = 'chatD';
  readonly word = 'conversation';
  /** The kit's catch-up this reads for (its connection number). */
  kit!: HistoryCatchUp<HistoryMessage, SlackMessageEvent>;
  /**
   * Conversation kinds, from live events, the conversations list and conversations.info, each with the connection it
   * was last noted on; none of direct messages (`D…`: `kindOf` knows them). At each hello those of conversations
   * without a cursor not noted on the connection that just ended are forgotten (they are not read; one that gets a
   * cursor is noted again by its live message), so this holds what catch-up reads, not every conversation ever seen.
   */
  readonly kinds = new Map<string, { kind: ChannelType; connection: number }>();
  /** Threads still to read in this round (connect or sweep). */
  private threadBudget = { left: THREADS_PER_ROUND };
  /** `threads:<channel>` → the error code last warned about reading its threads. */
  private readonly warned = new Map<string, string>();
  /** The scopes users.conversations said were missing (said once). */
  private scopesSaid = false;

  constructor(private readonly o: CatchUpOptions) {}

  isCursor = (v: string) => micros(v) !== undefined;
  newer = (a: string, b: string) => micros(a)! > micros(b)!;
  cursorMs = tsMs;
  cursorAt = tsAt;
  idOf = (m: HistoryMessage) => m.ts;
  eventMs = (e: SlackMessageEvent) => tsMs(e.ts);
  describe = codeOf;
  retryAfter = retryAfter;

  /** Notes a conversation's kind (not a direct message's: `kindOf` knows those), on this connection. */
  noteKind(channel: string, kind: ChannelType): void {
    if (channel.startsWith('D')) return;
    const k = this.kinds.get(channel);
    if (k) {
      k.kind = kind;
      k.connection = this.kit.connection;
    } else this.kinds.set(channel, { kind, connection: this.kit.connection });
  }

  /** `conversations.history` after `after` (newest first), below `below` when a failed read got the pages above it. */
  async page(channel: string, q: { after: string; below?: string; token?: string }, ctx: CatchUpContext) {
    const page = await ctx.call(() =>
      this.o.client.conversations.history({
        channel,
        oldest: q.after,
        inclusive: false,
        limit: PAGE,
        ...(q.below ? { latest: q.below } : {}),
        ...(q.token ? { cursor: q.token } : {}),
      }),
    );
    const next = page.has_more === true ? page.response_metadata?.next_cursor || undefined : undefined;
    return { messages: (page.messages ?? []) as HistoryMessage[], ...(next ? { next } : {}) };
  }

  /**
   * Reads the conversation's threads (see the top of this file) and records them with `kept` in one transaction,
   * in ts order. A rate limit met reading a thread is returned as `error` (after recording what was read).
   */
  async record(channel: string, kept: HistoryMessage[], ctx: CatchUpContext) {
    const replies: Array<{ key: string; newest: string; messages: HistoryMessage[] }> = [];
    let limited: unknown;
    const threadsRead: string[] = [];
    for (const t of this.threadsToRead(channel, kept, ctx)) {
      if (ctx.signal.aborted) return undefined;
      try {
        const messages = await this.readThread(channel, t.ts, t.oldest, ctx);
        threadsRead.push(threadKey(channel, t.ts));
        if (messages.length) replies.push({ key: threadKey(channel, t.ts), newest: messages.at(-1)!.ts!, messages });
        if (this.warned.delete(`threads:${channel}`)) this.o.log.info(`chatD: the threads of conversation ${channel} can be read again.`);
      } catch (e) {
        if (ctx.signal.aborted) return undefined;
        if (retryAfter(e) !== undefined) {
          limited = e; // recorded below what was read; the rest of the round waits for the next one
          break;
        }
        if (slackErrorCode(e) === 'thread_not_found') {
          this.o.store.deleteValue(threadKey(channel, t.ts)); // its parent was deleted
          continue;
        }
        this.threadFailed(channel, e);
        break; // the other threads of this conversation would answer the same
      }
    }
    const cursors = [
      ...(kept.length ? [{ key: cursorKey(channel), newest: kept.at(-1)!.ts! }] : []),
      ...replies.map((r) => ({ key: r.key, newest: r.newest })),
    ];
    let fresh: SlackMessageEvent[] = [];
    if (cursors.length) {
      const type = await this.kindOf(channel, ctx.signal);
      if (ctx.signal.aborted) return undefined;
      // One conversation, in the order it was written: a thread reply between two messages stays between them.
      const all = [...kept, ...replies.flatMap((r) => r.messages)].sort((a, b) => (micros(a.ts!)! < micros(b.ts!)! ? -1 : 1));
      const events = all.map((m) => historyEvent(channel, type, m)).filter((e): e is SlackMessageEvent => e !== undefined);
      fresh = this.o.record(channel, events, cursors);
    }
    return { fresh, readKeys: threadsRead, ...(limited !== undefined ? { error: limited } : {}) };
  }

  /** A round starts: its thread budget, and the cursors of threads quiet for 7 days forgotten. */
  beginRound(): void {
    this.threadBudget = { left: THREADS_PER_ROUND };
    const since = Date.now() - SWEEP_ACTIVE_MS;
    for (const { key, value } of this.o.store.values(THREAD_PREFIX))
      if (micros(value) === undefined || tsMs(value) < since) this.o.store.deleteValue(key);
  }

  /**
   * The threads of `channel` to read now, from the round's budget: those whose parent `kept` shows replies newer
   * than what was recorded of them, then those with a cursor (active in the last 7 days), most recently active first.
   */
  private threadsToRead(channel: string, kept: HistoryMessage[], ctx: CatchUpContext): Array<{ ts: string; oldest: string }> {
    const prefix = threadKey(channel, '');
    const tracked = this.o.store
      .values(prefix)
      .filter(({ key, value }) => micros(key.slice(prefix.length)) !== undefined && micros(value) !== undefined)
      // A sweep reads a thread from where this connection's previous read of it ended, when that is older.
      .map(({ key, value }) => ({ ts: key.slice(prefix.length), cursor: value, from: ctx.from(key, value) }));
    const cursorOf = new Map(tracked.map((t) => [t.ts, t.from]));
    const out: Array<{ ts: string; oldest: string }> = [];
    const known = new Set<string>();
    for (const m of [...kept].reverse()) {
      if (!m.ts || !m.latest_reply || !(Number(m.reply_count) > 0) || micros(m.latest_reply) === undefined) continue;
      known.add(m.ts);
      const from = cursorOf.get(m.ts) ?? m.ts;
      if (newerTs(from, m.latest_reply) !== from) out.push({ ts: m.ts, oldest: from });
    }
    const since = Date.now() - SWEEP_ACTIVE_MS;
    const active = tracked
      .filter((t) => !known.has(t.ts) && tsMs(t.cursor) >= since)
      .sort((a, b) => (micros(a.cursor)! > micros(b.cursor)! ? -1 : 1));
    for (const t of active) out.push({ ts: t.ts, oldest: t.from });
    const n = Math.max(0, Math.min(out.length, this.threadBudget.left));
    this.threadBudget.left -= n;
    return out.slice(0, n);
  }

  /** A thread's replies after `oldest`, oldest first (at most 500: the next catch-up goes on after them). */
  private async readThread(channel: string, threadTs: string, oldest: string, ctx: CatchUpContext): Promise<HistoryMessage[]> {
    const after = micros(oldest)!;
    const out: HistoryMessage[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await ctx.call(() =>
        this.o.client.conversations.replies({
          channel,
          ts: threadTs,
          oldest,
          inclusive: false,
          limit: REPLIES_PAGE,
          ...(cursor ? { cursor } : {}),
        }),
      );
      // The parent comes first on every read; only the replies after the cursor count.
      for (const m of (page.messages ?? []) as HistoryMessage[]) {
        const t = m.ts ? micros(m.ts) : undefined;
        if (t !== undefined && m.ts !== threadTs && t > after) out.push({ ...m, thread_ts: threadTs });
      }
      cursor = page.response_metadata?.next_cursor || undefined;
      if (!(page.has_more === true && cursor) || out.length >= MAX_PER_THREAD) break;
    }
    return out.sort((a, b) => (micros(a.ts!)! < micros(b.ts!)! ? -1 : 1)).slice(0, MAX_PER_THREAD);
  }

  /** `D...` is a direct message; otherwise asked once (conversations.info) and kept; `channel` when that fails. */
  private async kindOf(channel: string, signal: AbortSignal): Promise<ChannelType> {
    if (channel.startsWith('D')) return 'im';
    const known = this.kinds.get(channel);
    if (known) return known.kind;
    try {
      const r = await bounded(this.o.client.conversations.info({ channel }), HISTORY_CALL_TIMEOUT_MS, signal);
      const c = (r.channel ?? {}) as { is_im?: boolean; is_mpim?: boolean; is_private?: boolean };
      const kind: ChannelType = c.is_im ? 'im' : c.is_mpim ? 'mpim' : c.is_private ? 'group' : 'channel';
      this.noteKind(channel, kind);
      return kind;
    } catch (e) {
      if (!signal.aborted) this.o.log.debug(`chatD: conversations.info of ${channel} failed (${codeOf(e)}); taken as a channel.`);
      return 'channel';
    }
  }

  /**
   * At the first hello after a start, and at a hello after a gap (not a routine reconnect: the envelopes Slack sends
   * again cover that), the conversations the bot is in that have no cursor are listed in the round.
   */
  newcomers(since: number, _floor: string, first: boolean): CatchUpNewcomers | undefined {
    if (!first && Date.now() - since <= NEWCOMER_GAP_MS) return undefined;
    return { later: (ctx, known) => this.listNewcomers(known, ctx) };
  }

  /**
   * The conversations the bot is a member of that have no cursor (never heard from), the most recently updated
   * first, at most MAX_NEW_CONVERSATIONS. Types the token's scopes do not cover are left out (said once). A failed
   * list is warned about, and nothing is read.
   */
  private async listNewcomers(known: Set<string>, ctx: CatchUpContext): Promise<string[]> {
    let types = TYPE_SCOPES.map(([t]) => t);
    const found = new Map<string, ListedConversation>();
    let cursor: string | undefined;
    let pages = 0;
    while (types.length && pages < LIST_PAGES) {
      if (ctx.signal.aborted) return [];
      let page: { channels?: ListedConversation[]; response_metadata?: { next_cursor?: string } };
      try {
        page = (await ctx.call(() =>
          this.o.client.users.conversations({
            types: types.join(','),
            exclude_archived: true,
            limit: LIST_PAGE,
            ...(cursor ? { cursor } : {}),
          }),
        )) as typeof page;
      } catch (e) {
        if (ctx.signal.aborted) return [];
        if (slackErrorCode(e) === 'missing_scope' && pages === 0) {
          types = this.withoutMissing(types, e);
          continue;
        }
        this.o.log.warn(
          `chatD: could not list the conversations the bot is in (Slack answered ${codeOf(e)}); conversations Keel had not heard from are not caught up this time.`,
        );
        return [];
      }
      pages++;
      for (const c of page.channels ?? []) if (c.id) found.set(c.id, c);
      cursor = page.response_metadata?.next_cursor || undefined;
      if (!cursor) break;
    }
    const at = (c: ListedConversation) => (typeof c.updated === 'number' ? c.updated : Number(c.created ?? 0) * 1000);
    const all = [...found.values()]
      .filter(
        (c) =>
          /^[CGD][A-Z0-9]+$/.test(c.id!) &&
          !c.is_archived &&
          !c.is_user_deleted &&
          !known.has(c.id!) &&
          this.o.store.getValue(cursorKey(c.id!)) === undefined,
      )
      .sort((a, b) => at(b) - at(a));
    if (all.length > MAX_NEW_CONVERSATIONS)
      this.o.log.warn(
        `chatD: the bot is in ${all.length} conversations Keel had not heard from; the ${MAX_NEW_CONVERSATIONS} most recently updated are read for what was said while Keel was away, not the other ${all.length - MAX_NEW_CONVERSATIONS}.`,
      );
    const list = all.slice(0, MAX_NEW_CONVERSATIONS);
    for (const c of list) this.noteKind(c.id!, c.is_im ? 'im' : c.is_mpim ? 'mpim' : c.is_private ? 'group' : 'channel');
    return list.map((c) => c.id!);
  }

  /** `types` without those whose scope Slack says is missing (`needed`), said once; all but public when it names none. */
  private withoutMissing(types: string[], e: unknown): string[] {
    const needed = String((e as { data?: { needed?: string } }).data?.needed ?? '')
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
    const scopeOf = new Map(TYPE_SCOPES);
    let left = types.filter((t) => !needed.includes(scopeOf.get(t)!));
    if (left.length === types.length) left = types.length > 1 && types.includes('public_channel') ? ['public_channel'] : [];
    if (!this.scopesSaid) {
      this.scopesSaid = true;
      const dropped = types.filter((t) => !left.includes(t));
      const missing = dropped.map((t) => scopeOf.get(t)!);
      const what = dropped.map((t) => TYPE_WORDS[t] ?? t).join(', ');
      this.o.log.info(
        `chatD: the bot token lacks the scope(s) ${missing.join(', ')} (Slack answered missing_scope), so Keel cannot find ` +
          `${what} it had not heard from that were written in while it was away. Add the scope(s) to the app's bot token to catch those up too.`,
      );
    }
    return left;
  }

  roundEnded(r: CatchUpSummary): void {
    if (r.unread && !r.cutShort)
      this.o.log.warn(
        `chatD: ${r.unread} conversation(s) Keel had not heard from were not read (Slack rate-limited reading the history); what was said there while Keel was away is not caught up.`,
      );
    if (r.newFound)
      this.o.log.info(
        `chatD: ${r.newFound} message(s) said while Keel was away in conversation(s) it had not heard from were read from the history.`,
      );
    this.o.log.debug(`chatD: catch-up (${r.sweep ? 'sweep' : 'connect'}) read ${r.read} of ${r.listed} conversation(s).`);
  }

  /** A conversation whose threads could not be read: warned once per conversation and error code. */
  private threadFailed(channel: string, e: unknown): void {
    const code = codeOf(e);
    const key = `threads:${channel}`;
    if (this.warned.get(key) === code) {
      this.o.log.debug(`chatD: the threads of conversation ${channel} still cannot be read (${code}).`);
      return;
    }
    this.warned.set(key, code);
    this.o.log.warn(
      `chatD: could not read the thread replies of conversation ${channel} to catch up (Slack answered ${code}); ` +
        (code === 'missing_scope' || code === 'not_allowed_token_type'
          ? 'give the bot token the channels:history and groups:history scopes. '
          : '') +
        'Its other messages are caught up; the next catch-up tries the threads again.',
    );
  }

  readonly lines = {
    failed: (channel: string, code: string) =>
      `chatD: could not read the history of conversation ${channel} to catch up (Slack answered ${code}); its cursor stays and the next catch-up tries again.`,
    tooMany: (channel: string, max: number) =>
      `chatD: more than ${max} messages in conversation ${channel} since it was last read; the newest ${max} are caught up, the older ones are not.`,
    undelivered: (n: number, channels: string[]) =>
      `chatD: Slack did not deliver ${n} message(s) over the Socket Mode connection (in ${channels.join(', ')}); ` +
      'they were read from the history. Rebuilding the connection.',
    rebuildReason: (n: number) =>
      `Slack stopped delivering events over this Socket Mode connection (${n} message(s) found only in the history)`,
    rateWait: (wait: number) => `chatD: Slack rate-limits reading the history; waiting ${wait} s as it asks (Retry-After).`,
    rateLimited: (channel: string) =>
      `chatD: Slack rate-limited reading the history of conversation ${channel} (ratelimited) again, or for longer than ` +
      `${MAX_RETRY_AFTER_S} s; the conversations not read yet are left for the next catch-up.`,
  };
}

/** The catch-up of one chatD channel: the kit's `HistoryCatchUp` with Slack's adapter. */
export class CatchUp extends HistoryCatchUp<HistoryMessage, SlackMessageEvent> {
  private readonly history: SlackHistory;

  constructor(o: CatchUpOptions) {
    const history = new SlackHistory(o);
    super({
      ...o,
      adapter: history,
      maxPerChat: MAX_PER_CONVERSATION,
      maxRetryAfterS: MAX_RETRY_AFTER_S,
      // Conversations still behind (a failed or rate-limited read) are read first by the next sweep.
      sweepBehind: true,
    });
    this.history = history;
    history.kit = this;
  }

  /**
   * A message delivered over the socket: its conversation's kind is known, and unless its history is still due on
   * this connection, the conversation counts as followed live from now on.
   */
  override live(channel: string, channelType?: ChannelType): void {
    if (channelType) this.history.noteKind(channel, channelType);
    super.live(channel);
  }

  /** How many conversations the per-conversation maps hold (for tests and diagnostics). */
  sizes(): { kinds: number; followed: number } {
    return { kinds: this.history.kinds.size, followed: this.followedCount };
  }

  /**
   * At every hello: reads every conversation with a cursor (and after a gap those Keel never heard from). Their live
   * messages wait from now until their history is recorded. A round still running is cut short.
   */
  override afterConnect(): number {
    const connection = super.afterConnect();
    // Kinds kept: those of conversations with a cursor (the ones read), and those noted on the connection that just
    // ended (a live message's cursor may not be written yet).
    for (const [channel, k] of this.history.kinds)
      if (k.connection < connection - 1 && !this.isDue(channel)) this.history.kinds.delete(channel);
    return connection;
  }
}
