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
  ALIVE_MARGIN_MS,
  AliveMark,
  type ChannelStore,
  HISTORY_CALL_TIMEOUT_MS,
  HistoryRounds,
  SWEEP_ACTIVE_MS,
  SWEEP_CHATS,
  UNDELIVERED_AFTER_MS,
} from '../../../sdk/channel-kit/index.js';
import { bounded, errorMessage, type Logger, sleep } from '../../../sdk/index.js';
import type { SlackFile } from './files.js';
import type { SlackMessageEvent } from './inbound.js';
import { slackErrorCode } from './slack.js';

const PREFIX = 'last:';
/** Messages per `conversations.history` page. */
const PAGE = 100;
/** At most this many messages of one conversation per catch-up (the newest ones after the cursor). */
export const MAX_PER_CONVERSATION = 500;
/** A Retry-After longer than this ends the round at once instead of being waited for. */
const MAX_RETRY_AFTER_S = 60;

/** The kv key of a conversation's history cursor. */
export const cursorKey = (channel: string) => `${PREFIX}${channel}`;

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

/** The catch-up of one chatD channel. */
export class CatchUp {
  /** ISO time the last catch-up ended. */
  lastCatchUpAt: string | undefined;
  /** Messages recorded by catch-ups since start (not already recorded from the socket). */
  caughtUp = 0;

  /** When the history is read (after each hello, and sweeps), and the gates live messages wait at meanwhile. */
  private readonly rounds: HistoryRounds;
  /**
   * Conversation kinds, from live events, the conversations list and conversations.info, each with the connection it
   * was last noted on; none of direct messages (`D…`: `kindOf` knows them). At each hello those of conversations
   * without a cursor not noted on the connection that just ended are forgotten (they are not read; one that gets a
   * cursor is noted again by its live message), so this holds what catch-up reads, not every conversation ever seen.
   */
  private readonly kinds = new Map<string, { kind: ChannelType; connection: number }>();
  /** Connections since start (each hello); the one a conversation was last known to be followed on. */
  private connection = 0;
  /** Conversations followed live on this connection (emptied at each hello: only this connection's count). */
  private readonly followed = new Map<string, number>();
  /** Conversations with a cursor at this connection's hello whose history has not been read on it yet. */
  private due = new Set<string>();
  /** Reads cut short (newest pages first): the messages got so far, after `oldest` and before `latest`. */
  private readonly partial = new Map<string, { oldest: string; latest: string; messages: HistoryMessage[] }>();
  /**
   * Conversation (or thread key) → its cursor when this connection last read its history (or replies): a sweep reads
   * from there.
   */
  private readonly readTo = new Map<string, string>();
  /** Conversations being read now. */
  private readonly reading = new Set<string>();
  /** Conversation → the error code last warned about (warned once until it reads again). */
  private readonly warned = new Map<string, string>();
  private rateWarned = false;
  /** Conversations without a cursor to read on this connection: the ts to read from (when Keel was last up). */
  private readonly startAt = new Map<string, string>();
  /** When the connection was last known up (the kit's `alive` mark). */
  private readonly alive: AliveMark;
  /** The scopes users.conversations said were missing (said once). */
  private scopesSaid = false;

  constructor(private readonly o: CatchUpOptions) {
    this.rounds = new HistoryRounds({ signal: o.signal, interval: o.interval, connected: o.connected, onSweep: () => this.sweep() });
    this.alive = new AliveMark({ store: o.store, log: o.log, connected: o.connected, channel: 'chatD' });
  }

  /** Live messages of the conversations being caught up wait here. */
  private get gates() {
    return this.rounds.gates;
  }

  /** Starts the periodic sweeps, and the minutely `alive` mark while connected. */
  start(): void {
    this.rounds.start();
    this.alive.start();
  }

  /**
   * Stops the sweeps and the round in progress (live messages waiting for it are let through), noting the time if
   * connected.
   */
  stop(): Promise<void> {
    this.alive.stop();
    return this.rounds.stop();
  }

  /**
   * A message delivered over the socket: its conversation's kind is known, and unless its history is still due on
   * this connection, the conversation counts as followed live from now on.
   */
  live(channel: string, channelType?: ChannelType): void {
    if (channelType) this.noteKind(channel, channelType);
    if (!this.due.has(channel)) this.followed.set(channel, this.connection);
  }

  /** Notes a conversation's kind (not a direct message's: `kindOf` knows those), on this connection. */
  private noteKind(channel: string, kind: ChannelType): void {
    if (channel.startsWith('D')) return;
    const k = this.kinds.get(channel);
    if (k) {
      k.kind = kind;
      k.connection = this.connection;
    } else this.kinds.set(channel, { kind, connection: this.connection });
  }

  /** How many conversations the per-conversation maps hold (for tests and diagnostics). */
  sizes(): { kinds: number; followed: number } {
    return { kinds: this.kinds.size, followed: this.followed.size };
  }

  /**
   * Whether the history of `channel` is still to be read on this connection, is being read, or a read of it was cut
   * short: its live messages then leave its cursor where it is.
   */
  behind(channel: string): boolean {
    return this.due.has(channel) || this.partial.has(channel) || this.reading.has(channel);
  }

  /**
   * While the history of `channel` is due or being read, a promise that resolves once it is recorded (and that
   * conversation is read next); else undefined. While the conversations are being listed after a gap, a
   * conversation without a cursor waits for the list first (it may be one to read).
   */
  gate(channel: string): Promise<void> | undefined {
    return this.gates.gate(channel, () => this.o.store.getValue(cursorKey(channel)) === undefined);
  }

  /**
   * At every hello: reads every conversation with a cursor. Their live messages wait from now until their history
   * is recorded. A round still running is cut short (this one reads everything again).
   */
  afterConnect(): void {
    const connection = ++this.connection;
    this.readTo.clear();
    this.startAt.clear();
    // Only a conversation followed on this connection counts as followed (`followed.get(c) === connection`).
    this.followed.clear();
    const list = this.conversations();
    // A gap in which conversations never heard from may have been written in: Keel was stopped, or had no
    // connection for a while (a routine reconnect is followed by the envelopes Slack sends again).
    const since = this.alive.last(() => {
      const newest = list[0]?.cursor;
      return newest && micros(newest) !== undefined ? tsMs(newest) : undefined;
    });
    const gap = since !== undefined && (connection === 1 || Date.now() - since > NEWCOMER_GAP_MS) ? since : undefined;
    // The mark stays until the conversations without a cursor are read from it (a stop or a crash before then reads
    // them from it again at the next start).
    if (gap !== undefined) this.alive.hold();
    else this.alive.release(true);
    // Until the list is in, live messages of conversations without a cursor wait (one may be among those to read).
    if (gap !== undefined) this.gates.listing();
    else this.gates.listed();
    this.due = new Set(list.map((c) => c.channel));
    // Kinds kept: those of conversations with a cursor (the ones read), and those noted on the connection that just
    // ended (a live message's cursor may not be written yet).
    for (const [channel, k] of this.kinds) if (k.connection < connection - 1 && !this.due.has(channel)) this.kinds.delete(channel);
    this.rounds.afterConnect(
      list.map((c) => c.channel),
      (held, signal) => this.runRound('connect', list, held, connection, signal, gap),
    );
  }

  /**
   * A periodic sweep, unless a round is running, or the connection is down: conversations still behind first, then
   * the most recently active.
   */
  sweep(): void {
    if (this.rounds.busy) return;
    const since = Date.now() - SWEEP_ACTIVE_MS;
    const all = this.conversations();
    const list = [
      ...all.filter((c) => this.behind(c.channel)),
      ...all.filter((c) => !this.behind(c.channel) && tsMs(c.cursor) >= since),
    ].slice(0, SWEEP_CHATS);
    const connection = this.connection;
    this.rounds.sweep((held, signal) => this.runRound('sweep', list, held, connection, signal));
  }

  /**
   * The conversations the bot is a member of that have no cursor (never heard from), the most recently updated
   * first, at most MAX_NEW_CONVERSATIONS: each is held from now (its live messages wait), noted as due, and in
   * `startAt` with the ts to read from (`since`, less a minute). Types the token's scopes do not cover are left
   * out (said once). A failed list is warned about, and nothing is read.
   */
  private async newcomers(
    since: number,
    known: Set<string>,
    held: Set<string>,
    signal: AbortSignal,
    rate: { waited: boolean },
  ): Promise<string[]> {
    let types = TYPE_SCOPES.map(([t]) => t);
    const found = new Map<string, ListedConversation>();
    let cursor: string | undefined;
    let pages = 0;
    while (types.length && pages < LIST_PAGES) {
      if (signal.aborted) return [];
      let page: { channels?: ListedConversation[]; response_metadata?: { next_cursor?: string } };
      try {
        page = (await this.call(
          () =>
            this.o.client.users.conversations({
              types: types.join(','),
              exclude_archived: true,
              limit: LIST_PAGE,
              ...(cursor ? { cursor } : {}),
            }),
          signal,
          rate,
        )) as typeof page;
      } catch (e) {
        if (signal.aborted) return [];
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
    const from = tsAt(since - ALIVE_MARGIN_MS);
    const list = all.slice(0, MAX_NEW_CONVERSATIONS);
    for (const c of list) {
      const id = c.id!;
      this.noteKind(id, c.is_im ? 'im' : c.is_mpim ? 'mpim' : c.is_private ? 'group' : 'channel');
      this.startAt.set(id, from);
      this.due.add(id);
      this.gates.hold(id, held);
    }
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

  /** Conversations with a cursor, the most recently active first. */
  private conversations(): Array<{ channel: string; cursor: string }> {
    return this.o.store
      .values(PREFIX)
      .map(({ key, value }) => ({ channel: key.slice(PREFIX.length), cursor: value }))
      .sort((a, b) => (a.cursor === b.cursor ? 0 : newerTs(a.cursor, b.cursor) === a.cursor ? -1 : 1));
  }

  private async runRound(
    kind: 'connect' | 'sweep',
    list: Array<{ channel: string }>,
    held: Set<string>,
    connection: number,
    signal: AbortSignal,
    since?: number,
  ): Promise<void> {
    const rate = { waited: false, limited: false };
    const threads = { left: THREADS_PER_ROUND };
    const undelivered = new Map<string, number>();
    let read = 0;
    const rest = list.map((c) => c.channel);
    let newcomers: string[] = [];
    try {
      if (since !== undefined) newcomers = await this.newcomers(since, new Set(rest), held, signal, rate);
    } finally {
      // Held from here on (those to read), or let go (the others).
      if (connection === this.connection) this.gates.listed();
    }
    rest.push(...newcomers);
    this.pruneThreads();
    let newFound = 0;
    while (rest.length) {
      if (signal.aborted) break;
      // A conversation a live message waits for goes first.
      const channel = this.gates.next(rest);
      if (kind === 'sweep') this.gates.hold(channel, held);
      // Followed live on this connection before this read: what the read finds now, the socket should have brought.
      const wasFollowed = this.followed.get(channel) === connection && !this.due.has(channel);
      try {
        // A sweep does not hold a conversation's live messages through a Retry-After wait (a connection's
        // catch-up does: what was said before the connection must come first).
        const waiting =
          kind === 'sweep' ? { begin: () => this.gates.unhold(channel, held), end: () => this.gates.hold(channel, held) } : undefined;
        this.reading.add(channel);
        const fresh = await this.readConversation(channel, signal, rate, threads, kind === 'sweep', waiting).finally(() =>
          this.reading.delete(channel),
        );
        if (fresh === undefined) break; // stopped, or cut short
        read++;
        if (newcomers.includes(channel)) newFound += fresh.length;
        if (this.warned.delete(channel)) this.o.log.info(`chatD: the history of conversation ${channel} can be read again.`);
        if (connection === this.connection) this.followed.set(channel, connection);
        if (kind === 'sweep' && wasFollowed) {
          const late = fresh.filter((m) => Date.now() - tsMs(m.ts) > UNDELIVERED_AFTER_MS).length;
          if (late) undelivered.set(channel, late);
        }
      } catch (e) {
        if (signal.aborted) break;
        if (retryAfter(e) !== undefined) {
          rate.limited = true;
          this.rateLimited(channel);
          break; // the same limit holds for every conversation: the rest wait for the next round
        }
        this.failed(channel, e);
      } finally {
        // A conversation without a cursor is read once, from when Keel was last up: not again (it would be read
        // from nowhere); its live messages go on as usual.
        if (this.startAt.delete(channel)) this.done(channel);
        this.gates.unhold(channel, held);
      }
    }
    const unread = newcomers.filter((c) => this.startAt.delete(c));
    for (const c of unread) this.done(c);
    if (this.o.signal.aborted) return;
    // What was said while Keel was away is read (or was reported as not read): the mark moves again.
    if (since !== undefined && connection === this.connection && !signal.aborted) this.alive.release(this.o.connected());
    if (unread.length && !signal.aborted)
      this.o.log.warn(
        `chatD: ${unread.length} conversation(s) Keel had not heard from were not read (Slack rate-limited reading the history); what was said there while Keel was away is not caught up.`,
      );
    if (newFound)
      this.o.log.info(
        `chatD: ${newFound} message(s) said while Keel was away in conversation(s) it had not heard from were read from the history.`,
      );
    if (!rate.limited) this.rateWarned = false;
    this.lastCatchUpAt = new Date().toISOString();
    this.o.log.debug(`chatD: catch-up (${kind}) read ${read} of ${list.length} conversation(s).`);
    const n = [...undelivered.values()].reduce((a, b) => a + b, 0);
    if (n && connection === this.connection && this.o.connected()) {
      this.o.log.warn(
        `chatD: Slack did not deliver ${n} message(s) over the Socket Mode connection (in ${[...undelivered.keys()].join(', ')}); ` +
          'they were read from the history. Rebuilding the connection.',
      );
      this.o.rebuild(`Slack stopped delivering events over this Socket Mode connection (${n} message(s) found only in the history)`);
    }
  }

  /**
   * Reads a conversation's history after its cursor, and its threads (see the top of this file), and records them.
   * Returns the new messages, or undefined when the round was cut short before anything was recorded. Throws the
   * Slack error of the history (nothing recorded, the cursor stays), or a rate limit met reading a thread (after
   * recording what was read).
   */
  private async readConversation(
    channel: string,
    signal: AbortSignal,
    rate: { waited: boolean },
    threadBudget: { left: number },
    sweep: boolean,
    waiting?: { begin(): void; end(): void },
  ): Promise<SlackMessageEvent[] | undefined> {
    // A conversation without a cursor found after a gap is read from when Keel was last up (and from there even if a
    // live message gave it a cursor meanwhile: the ingress drops what it has).
    const cursor = this.startAt.get(channel) ?? this.o.store.getValue(cursorKey(channel));
    if (!cursor) {
      this.done(channel);
      return [];
    }
    // A sweep reads from where this connection's previous read of the conversation ended, when that is older than
    // the cursor: a message Slack dropped while it delivered later ones (which moved the cursor past it) is found too.
    const from = sweep ? this.readTo.get(channel) : undefined;
    const oldest = from !== undefined && newerTs(from, cursor) === cursor && from !== cursor ? from : cursor;
    const kept = await this.readHistory(channel, oldest, cursor, signal, rate, waiting);
    const replies: Array<{ key: string; newest: string; messages: HistoryMessage[] }> = [];
    let limited: unknown;
    const threadsRead: string[] = [];
    for (const t of this.threadsToRead(channel, kept, threadBudget, sweep)) {
      if (signal.aborted) return undefined;
      try {
        const messages = await this.readThread(channel, t.ts, t.oldest, signal, rate, waiting);
        threadsRead.push(threadKey(channel, t.ts));
        if (messages.length) replies.push({ key: threadKey(channel, t.ts), newest: messages.at(-1)!.ts!, messages });
        if (this.warned.delete(`threads:${channel}`)) this.o.log.info(`chatD: the threads of conversation ${channel} can be read again.`);
      } catch (e) {
        if (signal.aborted) return undefined;
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
      const type = await this.kindOf(channel, signal);
      if (signal.aborted) return undefined;
      // One conversation, in the order it was written: a thread reply between two messages stays between them.
      const all = [...kept, ...replies.flatMap((r) => r.messages)].sort((a, b) => (micros(a.ts!)! < micros(b.ts!)! ? -1 : 1));
      const events = all.map((m) => historyEvent(channel, type, m)).filter((e): e is SlackMessageEvent => e !== undefined);
      fresh = this.o.record(channel, events, cursors);
      this.caughtUp += fresh.length;
    }
    this.done(channel);
    this.readTo.set(channel, this.o.store.getValue(cursorKey(channel)) ?? cursor);
    for (const key of threadsRead) {
      const at = this.o.store.getValue(key);
      if (at) this.readTo.set(key, at);
    }
    if (limited !== undefined) throw limited;
    return fresh;
  }

  /**
   * The conversation's messages after `oldest` (newest 500, returned oldest first; `historyCursor`: the conversation's
   * cursor, for the warning when messages after it are left out). Throws the Slack error; the pages got before it
   * are kept, and the next read goes on below them.
   */
  private async readHistory(
    channel: string,
    oldest: string,
    historyCursor: string,
    signal: AbortSignal,
    rate: { waited: boolean },
    waiting?: { begin(): void; end(): void },
  ): Promise<HistoryMessage[]> {
    // A read cut short before goes on below what it got (the same cursor: nothing was recorded meanwhile).
    const before = this.partial.get(channel);
    const messages: HistoryMessage[] = before?.oldest === oldest ? before.messages : [];
    const latest = before?.oldest === oldest ? before.latest : undefined;
    this.partial.delete(channel);
    let cursor: string | undefined;
    let more = false;
    for (;;) {
      let page: Awaited<ReturnType<WebClient['conversations']['history']>>;
      try {
        page = await this.call(
          () =>
            this.o.client.conversations.history({
              channel,
              oldest,
              inclusive: false,
              limit: PAGE,
              ...(latest ? { latest } : {}),
              ...(cursor ? { cursor } : {}),
            }),
          signal,
          rate,
          waiting,
        );
      } catch (e) {
        // Nothing is recorded (that would move the cursor past what is not read yet); the pages got so far are kept.
        const last = messages.at(-1)?.ts;
        if (last) this.partial.set(channel, { oldest, latest: last, messages });
        throw e;
      }
      messages.push(...((page.messages ?? []) as HistoryMessage[]));
      cursor = page.response_metadata?.next_cursor || undefined;
      more = page.has_more === true && cursor !== undefined;
      if (!more || messages.length >= MAX_PER_CONVERSATION) break;
    }
    // Newest first: the newest 500 after the cursor are kept.
    const kept = messages.filter((m) => m.ts && micros(m.ts) !== undefined).slice(0, MAX_PER_CONVERSATION);
    // Cut short above the cursor: messages after it are left out (a re-read below it leaves out none).
    if (more && kept.every((m) => m.ts !== historyCursor && newerTs(historyCursor, m.ts!) === m.ts))
      this.o.log.warn(
        `chatD: more than ${MAX_PER_CONVERSATION} messages in conversation ${channel} since it was last read; the newest ${MAX_PER_CONVERSATION} are caught up, the older ones are not.`,
      );
    return kept.sort((a, b) => (micros(a.ts!)! < micros(b.ts!)! ? -1 : 1));
  }

  /**
   * The threads of `channel` to read now, from the round's budget: those whose parent `kept` shows replies newer
   * than what was recorded of them, then those with a cursor (active in the last 7 days), most recently active first.
   */
  private threadsToRead(
    channel: string,
    kept: HistoryMessage[],
    budget: { left: number },
    sweep: boolean,
  ): Array<{ ts: string; oldest: string }> {
    const prefix = threadKey(channel, '');
    const tracked = this.o.store
      .values(prefix)
      .map(({ key, value }) => {
        // A sweep reads a thread from where this connection's previous read of it ended, when that is older.
        const read = sweep ? this.readTo.get(key) : undefined;
        const from = read !== undefined && read !== value && newerTs(read, value) === value ? read : value;
        return { ts: key.slice(prefix.length), cursor: value, from };
      })
      .filter((t) => micros(t.ts) !== undefined && micros(t.cursor) !== undefined);
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
    const n = Math.max(0, Math.min(out.length, budget.left));
    budget.left -= n;
    return out.slice(0, n);
  }

  /** A thread's replies after `oldest`, oldest first (at most 500: the next catch-up goes on after them). */
  private async readThread(
    channel: string,
    threadTs: string,
    oldest: string,
    signal: AbortSignal,
    rate: { waited: boolean },
    waiting?: { begin(): void; end(): void },
  ): Promise<HistoryMessage[]> {
    const after = micros(oldest)!;
    const out: HistoryMessage[] = [];
    let cursor: string | undefined;
    for (;;) {
      const page = await this.call(
        () =>
          this.o.client.conversations.replies({
            channel,
            ts: threadTs,
            oldest,
            inclusive: false,
            limit: REPLIES_PAGE,
            ...(cursor ? { cursor } : {}),
          }),
        signal,
        rate,
        waiting,
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

  /** Forgets the cursors of threads with no reply recorded for 7 days (they are no longer read). */
  private pruneThreads(): void {
    const since = Date.now() - SWEEP_ACTIVE_MS;
    for (const { key, value } of this.o.store.values(THREAD_PREFIX))
      if (micros(value) === undefined || tsMs(value) < since) this.o.store.deleteValue(key);
  }

  /** The conversation's history is read (and recorded): its live messages move its cursor again. */
  private done(channel: string): void {
    this.due.delete(channel);
    this.partial.delete(channel);
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

  /** One Web API call, bounded in time; a rate limit is waited out once per round (Retry-After), then thrown. */
  private async call<T>(
    fn: () => Promise<T>,
    signal: AbortSignal,
    rate: { waited: boolean },
    waiting?: { begin(): void; end(): void },
  ): Promise<T> {
    for (;;) {
      try {
        return await bounded(fn(), HISTORY_CALL_TIMEOUT_MS, signal);
      } catch (e) {
        const wait = retryAfter(e);
        if (wait === undefined || rate.waited || wait > MAX_RETRY_AFTER_S || signal.aborted) throw e;
        rate.waited = true;
        this.o.log.info(`chatD: Slack rate-limits reading the history; waiting ${wait} s as it asks (Retry-After).`);
        waiting?.begin();
        try {
          await sleep(wait * 1000, signal);
        } finally {
          waiting?.end();
        }
      }
    }
  }

  private failed(channel: string, e: unknown): void {
    const code = codeOf(e);
    if (this.warned.get(channel) === code) {
      this.o.log.debug(`chatD: the history of conversation ${channel} still cannot be read (${code}).`);
      return;
    }
    this.warned.set(channel, code);
    this.o.log.warn(
      `chatD: could not read the history of conversation ${channel} to catch up (Slack answered ${code}); its cursor stays and the next catch-up tries again.`,
    );
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

  private rateLimited(channel: string): void {
    const line =
      `chatD: Slack rate-limited reading the history of conversation ${channel} (ratelimited) again, or for longer than ` +
      `${MAX_RETRY_AFTER_S} s; the conversations not read yet are left for the next catch-up.`;
    if (this.rateWarned) this.o.log.debug(line);
    else this.o.log.warn(line);
    this.rateWarned = true;
  }
}
