/**
 * Catch-up after a new gateway session. Discord replays missed events only to a RESUME of the same session; a new
 * session (Keel restarted, or the session was invalidated) starts with what is said from then on. So each channel
 * the bot has heard from keeps a cursor (`last:<channel id>`, the newest message id recorded there, stored with the
 * ingress record in one transaction), and after READY the history after that cursor is read
 * (`GET /channels/:id/messages`, newest first) and recorded like gateway messages; the ingress drops what it has.
 *
 * Only the channels being read wait: the live messages of a channel whose history is still to be read wait for it
 * (so a channel's messages are recorded, and handled, in order), and that channel is read next; every other channel's
 * live messages are recorded at once. A channel whose read failed stays behind until the next session: its live
 * messages are recorded without moving its cursor, so the next read starts where the gap does.
 *
 * Bounds: the 200 most recently active channels (by their cursor's time) per session, read four at a time, the
 * newest 500 messages after the cursor per channel (more is said with one warning), 30 s per request.
 *
 * A channel Keel never heard from (no cursor: a new channel or thread, or one where nobody had spoken to the bot)
 * has no cursor to read from. Keel records when it was last connected (`alive`, every minute while connected and at
 * a clean stop); after READY, each guild channel or active thread of GUILD_CREATE without a cursor whose
 * `last_message_id` is newer than that (less a minute), and whose history the bot may read, is read from that time
 * like the others (at most the 50 with the newest messages). A DM channel Keel never heard from cannot be found
 * (a bot cannot list its DMs). A thread archived while Keel was away is not in GUILD_CREATE: when Keel was away for
 * longer than the shortest auto-archive time (an hour), the public archived threads of up to 50 channels (the most
 * recently active first) are listed (`GET /channels/:id/threads/archived/public`, newest archived first, down to
 * that time), and each one without a cursor archived since, with messages from since, is read the same way. Live
 * messages of channels without a cursor wait until that list is in (one may be a thread to read first).
 *
 * A session can also stop delivering messages while it goes on acknowledging heartbeats (Discord has had such
 * incidents; a new session cures them). So every `chatCCatchUpInterval` seconds the 50 most recently active
 * channels of the last 7 days are read the same way, each from where this session's previous read of it ended (so a
 * message dropped between delivered ones is found too), and a person's message older than a minute found there,
 * which the session should have delivered, rebuilds the connection (a new session) with one warning. The reads use a REST client of their
 * own that waits out Discord's rate limits (at most 25 requests a second, leaving room for replies).
 */
import type { REST } from 'discord.js';
import {
  ALIVE_MARGIN_MS,
  type CatchUpAdapter,
  type CatchUpContext,
  type CatchUpNewcomers,
  type CatchUpSummary,
  type ChannelStore,
  HistoryCatchUp,
  historyCursorKey,
} from '../../../sdk/channel-kit/index.js';
import { errorMessage, type Logger } from '../../../sdk/index.js';
import type { SeenChannel } from './gateway.js';
import type { DcInboundMessage } from './inbound.js';

/** Messages per history request (Discord's maximum). */
const PAGE = 100;
/** At most this many messages per channel per catch-up: the newest after the cursor. */
export const MAX_PER_CHANNEL = 500;
/** At most this many channels are read after a new session, the most recently active first. */
export const MAX_CHANNELS = 200;
/** Channels read at the same time. */
const READERS = 4;
/** Discord's epoch (2015-01-01T00:00:00Z): a snowflake's top 42 bits are milliseconds since. */
const DISCORD_EPOCH = 1_420_070_400_000n;

export const cursorKey = historyCursorKey;
/** At most this many channels without a cursor are read after a new session, the newest messages first. */
export const MAX_NEW_CHANNELS = 50;
/** Archived threads are listed only after a longer gap than this: Discord's shortest auto-archive time (an hour). */
export const ARCHIVE_GAP_MS = 3_600_000 - ALIVE_MARGIN_MS;
/** The archived threads of at most this many channels are listed after a new session, the most recently active first. */
export const MAX_THREAD_PARENTS = 50;
/** Archived threads per listing page (Discord's maximum is 100), and pages per channel. */
const ARCHIVED_PAGE = 50;
const ARCHIVED_PAGES = 4;

/** A thread as `GET /channels/:id/threads/archived/public` lists it (what chatC reads of it). */
interface ArchivedThread {
  id?: string;
  last_message_id?: string | null;
  thread_metadata?: { archive_timestamp?: string };
}

/** The newer of two snowflakes (undefined counts as oldest). */
export function newer(a: string | undefined, b: string): string {
  return a === undefined || BigInt(b) > BigInt(a) ? b : a;
}

/** Epoch milliseconds of a snowflake. */
export function snowflakeMs(id: string): number {
  return Number((BigInt(id) >> 22n) + DISCORD_EPOCH);
}

/** The least snowflake of epoch millisecond `ms` (a message written then or later has an id at least this). */
export function snowflakeAt(ms: number): string {
  return String((BigInt(Math.max(0, Math.floor(ms))) - DISCORD_EPOCH) << 22n);
}

const isSnowflake = (s: string) => /^\d{17,20}$/.test(s);
/** A seen channel's newest message id as a number (0 when it has none), for ordering by activity. */
const lastOf = (c: SeenChannel) => (c.lastMessageId && isSnowflake(c.lastMessageId) ? BigInt(c.lastMessageId) : 0n);

export interface BackfillOptions {
  /** A REST client for the reads (one that waits out rate limits rather than throwing them). */
  rest: REST;
  store: ChannelStore;
  log: Logger;
  /** Aborted when the channel stops. */
  signal: AbortSignal;
  /**
   * Records one channel's messages (oldest first) and moves its cursor to `newest` (the newest id read); returns the
   * messages that were new (not recorded from the gateway already).
   */
  record(channelId: string, messages: DcInboundMessage[], newest: string): DcInboundMessage[];
  /** Seconds between periodic sweeps, asked before each wait (0: none). */
  interval(): number;
  /** Whether the connection is up now. */
  connected(): boolean;
  /** Rebuilds the connection with a new session (the supervisor's `restart`). */
  rebuild(reason: string): void;
}

/** Discord's side of the kit's catch-up: the REST calls, snowflakes, GUILD_CREATE and archived-thread newcomers. */
class DiscordHistory implements CatchUpAdapter<DcInboundMessage, DcInboundMessage> {
  readonly name = 'chatC';
  readonly word = 'channel';
  /** The guild channels and threads of the last READY (GUILD_CREATE). */
  seen: SeenChannel[] = [];
  /** Parent channel → the error last warned about listing its archived threads. */
  private readonly warned = new Map<string, string>();

  constructor(private readonly o: BackfillOptions) {}

  isCursor = isSnowflake;
  isChat = isSnowflake;
  newer = (a: string, b: string) => BigInt(a) > BigInt(b);
  cursorMs = snowflakeMs;
  cursorAt = snowflakeAt;
  idOf = (m: DcInboundMessage) => m.id;
  eventMs = (m: DcInboundMessage) => snowflakeMs(m.id);
  describe = errorMessage;

  /** Newest first; a short page, or one reaching the cursor, is the last. */
  async page(channelId: string, q: { after: string; below?: string; token?: string }, ctx: CatchUpContext) {
    const before = q.token ?? q.below;
    const query = new URLSearchParams({ limit: String(PAGE), ...(before ? { before } : {}) });
    const page = (await ctx.call((signal) => this.o.rest.get(`/channels/${channelId}/messages`, { query, signal }))) as DcInboundMessage[];
    const floor = BigInt(q.after);
    const last = page.length < PAGE || page.some((m) => !isSnowflake(m.id) || BigInt(m.id) <= floor);
    const next = last ? undefined : page.reduce((a, m) => (BigInt(m.id) < BigInt(a) ? m.id : a), page[0]!.id);
    return { messages: page, ...(next ? { next } : {}) };
  }

  async record(channelId: string, messages: DcInboundMessage[]) {
    return { fresh: messages.length ? this.o.record(channelId, messages, messages.at(-1)!.id) : [] };
  }

  /**
   * After a gap: the guild channels and threads of GUILD_CREATE without a cursor that have messages from after
   * `floor`; and, after a gap longer than a thread takes to archive itself, the archived threads (listed in the round).
   */
  newcomers(since: number, floor: string): CatchUpNewcomers {
    const now = this.seenNewcomers(since, floor);
    const parents =
      Date.now() - since > ARCHIVE_GAP_MS
        ? this.seen
            .filter((c) => c.threads && c.readable !== false && isSnowflake(c.id))
            .sort((a, b) => (lastOf(b) > lastOf(a) ? 1 : -1))
            .slice(0, MAX_THREAD_PARENTS)
            .map((c) => c.id)
        : [];
    return parents.length ? { now, later: (ctx, known) => this.archivedThreads(parents, floor, known, ctx) } : { now };
  }

  /** Seen channels without a cursor with messages after `floor`, whose history the bot may read; the newest first. */
  private seenNewcomers(since: number, floor: string): string[] {
    const all = this.seen
      .filter(
        (c) =>
          isSnowflake(c.id) &&
          !c.forum &&
          c.readable !== false &&
          c.lastMessageId !== undefined &&
          isSnowflake(c.lastMessageId) &&
          BigInt(c.lastMessageId) > BigInt(floor) &&
          this.o.store.getValue(cursorKey(c.id)) === undefined,
      )
      .sort((a, b) => (BigInt(a.lastMessageId!) > BigInt(b.lastMessageId!) ? -1 : 1));
    if (all.length > MAX_NEW_CHANNELS)
      this.o.log.warn(
        `chatC: ${all.length} channels Keel had not heard from have messages from while it was away; the ${MAX_NEW_CHANNELS} with the newest are read, not the other ${all.length - MAX_NEW_CHANNELS}.`,
      );
    const list = all.slice(0, MAX_NEW_CHANNELS).map((c) => c.id);
    if (list.length)
      this.o.log.info(
        `chatC: ${list.length} channel(s) Keel had not heard from have messages from while it was away (since ${new Date(since).toISOString()}); reading them.`,
      );
    return list;
  }

  /**
   * The public archived threads of `parents` archived since `floor` (newest archived first, as Discord lists them)
   * that have no cursor and messages after `floor`; the newest first, at most MAX_NEW_CHANNELS. A channel whose
   * threads cannot be listed is warned about once.
   */
  private async archivedThreads(parents: string[], floor: string, known: Set<string>, ctx: CatchUpContext): Promise<string[]> {
    const floorMs = snowflakeMs(floor);
    const found = new Map<string, string>();
    for (const parent of parents) {
      let before: string | undefined;
      for (let page = 0; page < ARCHIVED_PAGES; page++) {
        if (ctx.signal.aborted) return [];
        let r: { threads?: ArchivedThread[]; has_more?: boolean };
        try {
          const query = new URLSearchParams({ limit: String(ARCHIVED_PAGE), ...(before ? { before } : {}) });
          r = (await ctx.call((signal) => this.o.rest.get(`/channels/${parent}/threads/archived/public`, { query, signal }))) as typeof r;
        } catch (e) {
          if (ctx.signal.aborted) return [];
          const why = errorMessage(e);
          if (this.warned.get(parent) !== why) {
            this.warned.set(parent, why);
            this.o.log.warn(
              `chatC: could not list the archived threads of channel ${parent} (${why}); threads archived there while Keel was away are not caught up.`,
            );
          }
          break;
        }
        this.warned.delete(parent);
        const threads = r.threads ?? [];
        let older = false;
        for (const t of threads) {
          const at = Date.parse(t.thread_metadata?.archive_timestamp ?? '');
          if (!(at >= floorMs)) {
            older = true; // archived before Keel was away: so is every thread after it
            continue;
          }
          const last = t.last_message_id;
          if (!t.id || !isSnowflake(t.id) || !last || !isSnowflake(last) || BigInt(last) <= BigInt(floor)) continue;
          if (known.has(t.id) || this.o.store.getValue(cursorKey(t.id)) !== undefined) continue;
          found.set(t.id, last);
        }
        before = threads.at(-1)?.thread_metadata?.archive_timestamp;
        if (older || !r.has_more || !before) break;
      }
    }
    const all = [...found].sort((a, b) => (BigInt(a[1]) > BigInt(b[1]) ? -1 : 1)).map(([id]) => id);
    if (all.length > MAX_NEW_CHANNELS)
      this.o.log.warn(
        `chatC: ${all.length} threads archived while Keel was away have messages from then; the ${MAX_NEW_CHANNELS} with the newest are read, not the other ${all.length - MAX_NEW_CHANNELS}.`,
      );
    const list = all.slice(0, MAX_NEW_CHANNELS);
    if (list.length) this.o.log.info(`chatC: ${list.length} thread(s) archived while Keel was away have messages from then; reading them.`);
    return list;
  }

  roundEnded(r: CatchUpSummary): void {
    if (r.messages && !r.sweep)
      this.o.log.info(`chatC: read ${r.messages} message(s) from the history of ${r.chats} channel(s) after a new session.`);
  }

  readonly lines = {
    failed: (channelId: string, why: string, sweep: boolean) =>
      sweep
        ? `chatC: could not read the history of channel ${channelId} (${why}); the next sweep tries again.`
        : `chatC: could not read the history of channel ${channelId} after a new session (${why}); its cursor stays until the next new session reads it.`,
    tooMany: (channelId: string, max: number) =>
      `chatC: ${max} messages or more in channel ${channelId} since it was last read; the newest ${max} are caught up, the older ones are not.`,
    undelivered: (n: number, channels: string[]) =>
      `chatC: the Discord session did not deliver ${n} message(s) (in channel ${channels.join(', ')}); they were read from the history. Rebuilding the connection with a new session.`,
    rebuildReason: (n: number) => `the Discord session stopped delivering messages (${n} found only in the history)`,
    tooManyChats: (all: number, max: number, since: string) =>
      `chatC: ${all} channels were heard from; after this new session the history of the ${max} most recently active (since ${since}) is read, not of the other ${all - max}.`,
  };
}

/** The history catch-up of chatC: the kit's `HistoryCatchUp` with Discord's adapter, four channels read at once. */
export class Backfill extends HistoryCatchUp<DcInboundMessage, DcInboundMessage> {
  private readonly history: DiscordHistory;

  constructor(o: BackfillOptions) {
    const history = new DiscordHistory(o);
    super({
      ...o,
      adapter: history,
      maxPerChat: MAX_PER_CHANNEL,
      maxChats: MAX_CHANNELS,
      readers: READERS,
      // A channel whose read after READY failed waits for the next new session.
      sweepBehind: false,
    });
    this.history = history;
  }

  /**
   * After READY of a new session: reads the channels with a cursor, the most recently active first, and after a gap
   * the channels of `seen` (GUILD_CREATE) and archived threads Keel never heard from. A catch-up still running is
   * cut short.
   */
  afterReady(seen: SeenChannel[] = []): void {
    this.history.seen = seen;
    this.afterConnect();
  }

  /**
   * A live message of `channelId` (it counts as followed live unless its history is due): while its history is still
   * to be read, a promise that resolves once it is recorded; else undefined.
   */
  override gate(channelId: string): Promise<void> | undefined {
    this.live(channelId);
    return super.gate(channelId);
  }
}
