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
  AliveMark,
  type ChannelStore,
  HISTORY_CALL_TIMEOUT_MS,
  HistoryRounds,
  SWEEP_ACTIVE_MS,
  SWEEP_CHATS,
  UNDELIVERED_AFTER_MS,
} from '../../../sdk/channel-kit/index.js';
import { bounded, errorMessage, type Logger } from '../../../sdk/index.js';
import type { SeenChannel } from './gateway.js';
import type { DcInboundMessage } from './inbound.js';

const PREFIX = 'last:';
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

export const cursorKey = (channelId: string) => `${PREFIX}${channelId}`;
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

/** The history catch-up of chatC. */
export class Backfill {
  /** ISO time the last catch-up ended. */
  lastCatchUpAt: string | undefined;
  /** Messages recorded from the history since start (ones the gateway had not brought). */
  caughtUp = 0;
  /** When the history is read (after each READY, and sweeps), and the gates live messages wait at meanwhile. */
  private readonly rounds: HistoryRounds;
  /** Channels of this session whose history has not been read yet (or whose read failed). */
  private due = new Set<string>();
  private session = 0;
  /** Channel → the error last warned about (warned once until it is read again). */
  private readonly warned = new Map<string, string>();
  /**
   * Channel → its cursor when this session last read its history. A sweep reads from there, not from the cursor:
   * a message the session dropped while it delivered later ones (which moved the cursor past it) is found too.
   */
  private readonly readTo = new Map<string, string>();
  /** Channels without a cursor to read this session: where to read from (a snowflake of when Keel was last up). */
  private readonly startAt = new Map<string, string>();
  /** When the gateway was last known connected (the kit's `alive` mark). */
  private readonly alive: AliveMark;

  constructor(private readonly o: BackfillOptions) {
    this.rounds = new HistoryRounds({ signal: o.signal, interval: o.interval, connected: o.connected, onSweep: () => this.sweep() });
    this.alive = new AliveMark({ store: o.store, log: o.log, connected: o.connected, channel: 'chatC' });
  }

  private get gates() {
    return this.rounds.gates;
  }

  /** Starts the periodic sweeps, and the minutely `alive` mark while connected. */
  start(): void {
    this.rounds.start();
    this.alive.start();
  }

  /**
   * When Keel was last known connected (epoch ms): `alive`, or else the newest cursor's time (a store written
   * before `alive` existed); undefined on a first start, when there is no gap to read.
   */
  private lastAlive(): number | undefined {
    return this.alive.last(() => {
      const newest = this.o.store
        .values(PREFIX)
        .map((c) => c.value)
        .filter(isSnowflake)
        .reduce<string | undefined>((a, b) => newer(a, b), undefined);
      return newest ? snowflakeMs(newest) : undefined;
    });
  }

  /**
   * Guild channels and threads without a cursor that have messages from after Keel was last connected (less a
   * margin), and whose history the bot may read; the newest first, at most MAX_NEW_CHANNELS. Each is noted in
   * `startAt` with the snowflake to read from.
   */
  private newcomers(seen: SeenChannel[], since: number | undefined): string[] {
    this.startAt.clear();
    if (since === undefined) return [];
    const floor = snowflakeAt(since - ALIVE_MARGIN_MS);
    const all = seen
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
    for (const id of list) this.startAt.set(id, floor);
    if (list.length)
      this.o.log.info(
        `chatC: ${list.length} channel(s) Keel had not heard from have messages from while it was away (since ${new Date(since).toISOString()}); reading them.`,
      );
    return list;
  }

  /**
   * A periodic sweep, unless a catch-up is running or the connection is down: the most recently active channels of
   * the last 7 days whose history this session has read.
   */
  sweep(): void {
    if (this.rounds.busy) return;
    const since = Date.now() - SWEEP_ACTIVE_MS;
    const list = this.channels(false)
      .filter((c) => !this.due.has(c) && this.activeAt(c) >= since)
      .slice(0, SWEEP_CHATS);
    if (!list.length) return;
    const session = this.session;
    this.rounds.sweep((held, signal) => this.runRound(list, held, signal, { session }));
  }

  /** Epoch ms of a channel's cursor (its newest recorded message), 0 when it has none. */
  private activeAt(channelId: string): number {
    const cursor = this.o.store.getValue(cursorKey(channelId));
    return cursor && isSnowflake(cursor) ? snowflakeMs(cursor) : 0;
  }

  /**
   * After READY of a new session: reads the channels with a cursor, the most recently active first. Their live
   * messages wait from now until their history is recorded. A catch-up still running is cut short.
   */
  afterReady(seen: SeenChannel[] = []): void {
    this.session++;
    this.readTo.clear();
    const since = this.lastAlive();
    const list = [...this.channels(), ...this.newcomers(seen, since)];
    // READY came: connected now, whatever the supervisor says before this handler returns. After a gap the mark stays
    // until this session's catch-up has read the channels without a cursor from it (a stop or a crash before then
    // reads them from it again at the next start).
    if (since !== undefined) this.alive.hold();
    else this.alive.release(true);
    this.due = new Set(list);
    // Away for longer than a thread takes to archive itself: the archived threads are listed too.
    const parents =
      since !== undefined && Date.now() - since > ARCHIVE_GAP_MS
        ? seen
            .filter((c) => c.threads && c.readable !== false && isSnowflake(c.id))
            .sort((a, b) => (lastOf(b) > lastOf(a) ? 1 : -1))
            .slice(0, MAX_THREAD_PARENTS)
            .map((c) => c.id)
        : [];
    const archived = parents.length ? { parents, floor: snowflakeAt(since! - ALIVE_MARGIN_MS) } : undefined;
    // Until the list is in, live messages of channels without a cursor wait (one may be a thread to read first).
    if (archived) this.gates.listing();
    else this.gates.listed();
    const session = this.session;
    this.rounds.afterConnect(list, async (held, signal) => {
      await this.runRound(list, held, signal, undefined, archived && { ...archived, session });
      if (since !== undefined && session === this.session && !signal.aborted) this.alive.release(this.o.connected());
    });
  }

  /**
   * While the history of `channelId` is still to be read, a promise that resolves once it is recorded. While archived
   * threads are being listed, a channel without a cursor waits for the list first (it may be one to read).
   */
  gate(channelId: string): Promise<void> | undefined {
    return this.gates.gate(channelId, () => this.o.store.getValue(cursorKey(channelId)) === undefined);
  }

  /**
   * The public archived threads of `parents` archived since `floor` (newest archived first, as Discord lists them)
   * that have no cursor and messages after `floor`; the newest first, at most MAX_NEW_CHANNELS. Each is held from
   * now, noted as due and in `startAt`. A channel whose threads cannot be listed is warned about once.
   */
  private async archivedThreads(
    parents: string[],
    floor: string,
    known: Set<string>,
    held: Set<string>,
    signal: AbortSignal,
  ): Promise<string[]> {
    const floorMs = snowflakeMs(floor);
    const found = new Map<string, string>();
    for (const parent of parents) {
      let before: string | undefined;
      for (let page = 0; page < ARCHIVED_PAGES; page++) {
        if (signal.aborted) return [];
        let r: { threads?: ArchivedThread[]; has_more?: boolean };
        try {
          const query = new URLSearchParams({ limit: String(ARCHIVED_PAGE), ...(before ? { before } : {}) });
          r = (await bounded(
            this.o.rest.get(`/channels/${parent}/threads/archived/public`, { query, signal }),
            HISTORY_CALL_TIMEOUT_MS,
            signal,
          )) as typeof r;
        } catch (e) {
          if (signal.aborted) return [];
          const why = errorMessage(e);
          const key = `archived:${parent}`;
          if (this.warned.get(key) !== why) {
            this.warned.set(key, why);
            this.o.log.warn(
              `chatC: could not list the archived threads of channel ${parent} (${why}); threads archived there while Keel was away are not caught up.`,
            );
          }
          break;
        }
        this.warned.delete(`archived:${parent}`);
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
    for (const id of list) {
      this.startAt.set(id, floor);
      this.due.add(id);
      this.gates.hold(id, held);
    }
    if (list.length) this.o.log.info(`chatC: ${list.length} thread(s) archived while Keel was away have messages from then; reading them.`);
    return list;
  }

  /** Whether the history of `channelId` is still to be read this session: its live messages leave its cursor. */
  behind(channelId: string): boolean {
    return this.due.has(channelId);
  }

  /** Stops the catch-up in progress (live messages waiting for it are let through), noting the time if connected. */
  stop(): Promise<void> {
    this.alive.stop();
    return this.rounds.stop();
  }

  /** Channels with a cursor, the most recently active first, at most MAX_CHANNELS (the rest said, when `warn`). */
  private channels(warn = true): string[] {
    const all = this.o.store
      .values(PREFIX)
      .map(({ key, value }) => ({ channel: key.slice(PREFIX.length), cursor: value }))
      .filter((c) => isSnowflake(c.channel) && isSnowflake(c.cursor))
      .sort((a, b) => (BigInt(a.cursor) > BigInt(b.cursor) ? -1 : BigInt(a.cursor) < BigInt(b.cursor) ? 1 : 0));
    if (warn && all.length > MAX_CHANNELS) {
      const since = new Date(snowflakeMs(all[MAX_CHANNELS - 1]!.cursor)).toISOString();
      this.o.log.warn(
        `chatC: ${all.length} channels were heard from; after this new session the history of the ${MAX_CHANNELS} most recently active (since ${since}) is read, not of the other ${all.length - MAX_CHANNELS}.`,
      );
    }
    return all.slice(0, MAX_CHANNELS).map((c) => c.channel);
  }

  /**
   * Reads `list`. A session's catch-up holds every channel of it from the start (`held`); a sweep (`sweep`: of that
   * session) holds each channel only while it reads it, and counts what the session should have delivered.
   */
  private async runRound(
    list: string[],
    held: Set<string>,
    signal: AbortSignal,
    sweep?: { session: number },
    archived?: { parents: string[]; floor: string; session: number },
  ): Promise<void> {
    const rest = [...list];
    if (archived) {
      try {
        rest.push(...(await this.archivedThreads(archived.parents, archived.floor, new Set(list), held, signal)));
      } finally {
        // Held from here on (the threads to read), or let go (the others).
        if (archived.session === this.session) this.gates.listed();
      }
    }
    let messages = 0;
    let channels = 0;
    const undelivered = new Map<string, number>();
    // A few channels at once, so that one slow read does not hold up the channels after it.
    const worker = async () => {
      while (rest.length && !signal.aborted) {
        // A channel a live message waits for goes first.
        const channelId = this.gates.next(rest);
        if (sweep) this.gates.hold(channelId, held);
        try {
          const fresh = await this.readChannel(channelId, signal, sweep ? this.readTo.get(channelId) : undefined);
          if (fresh === undefined) return;
          if (!sweep) this.due.delete(channelId);
          if (this.warned.delete(channelId)) this.o.log.info(`chatC: the history of channel ${channelId} can be read again.`);
          messages += fresh.length;
          if (fresh.length) channels++;
          const late = fresh.filter((m) => Date.now() - snowflakeMs(m.id) > UNDELIVERED_AFTER_MS).length;
          if (sweep && late) undelivered.set(channelId, late);
        } catch (e) {
          if (signal.aborted) return;
          this.failed(channelId, e, sweep !== undefined);
        } finally {
          this.gates.unhold(channelId, held);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(READERS, rest.length) }, worker));
    if (this.o.signal.aborted) return;
    this.lastCatchUpAt = new Date().toISOString();
    if (messages && !sweep)
      this.o.log.info(`chatC: read ${messages} message(s) from the history of ${channels} channel(s) after a new session.`);
    const n = [...undelivered.values()].reduce((a, b) => a + b, 0);
    if (sweep && n && sweep.session === this.session && this.o.connected()) {
      this.o.log.warn(
        `chatC: the Discord session did not deliver ${n} message(s) (in channel ${[...undelivered.keys()].join(', ')}); they were read from the history. Rebuilding the connection with a new session.`,
      );
      this.o.rebuild(`the Discord session stopped delivering messages (${n} found only in the history)`);
    }
  }

  /** A read that failed: a warning, once per channel and error until the channel is read again. */
  private failed(channelId: string, e: unknown, sweep: boolean): void {
    const why = errorMessage(e);
    if (this.warned.get(channelId) === why) {
      this.o.log.debug(`chatC: the history of channel ${channelId} still cannot be read (${why}).`);
      return;
    }
    this.warned.set(channelId, why);
    this.o.log.warn(
      sweep
        ? `chatC: could not read the history of channel ${channelId} (${why}); the next sweep tries again.`
        : `chatC: could not read the history of channel ${channelId} after a new session (${why}); its cursor stays until the next new session reads it.`,
    );
  }

  /**
   * Reads the channel's messages after its cursor (newest first, at most MAX_PER_CHANNEL) and records them oldest
   * first with the cursor moved to the newest. Returns the messages that were new, undefined when cut short before
   * recording. Throws when a request fails (nothing recorded, the cursor stays).
   */
  private async readChannel(channelId: string, signal: AbortSignal, from?: string): Promise<DcInboundMessage[] | undefined> {
    // A channel without a cursor is read from when Keel was last connected (`startAt`), once.
    // (From there even if a live message gave it a cursor meanwhile: the ingress drops what it has.)
    const cursor = this.startAt.get(channelId) ?? this.o.store.getValue(cursorKey(channelId));
    if (!cursor || !isSnowflake(cursor)) return [];
    // From the older of the cursor and `from` (where the previous read of this session ended).
    const after = from && isSnowflake(from) && BigInt(from) < BigInt(cursor) ? from : cursor;
    const done = () => {
      this.startAt.delete(channelId);
      const now = this.o.store.getValue(cursorKey(channelId));
      if (now) this.readTo.set(channelId, now);
    };
    const floor = BigInt(after);
    const got: DcInboundMessage[] = [];
    let before: string | undefined;
    let more = false;
    for (;;) {
      const query = new URLSearchParams({ limit: String(PAGE), ...(before ? { before } : {}) });
      const page = (await bounded(
        this.o.rest.get(`/channels/${channelId}/messages`, { query, signal }),
        HISTORY_CALL_TIMEOUT_MS,
        signal,
      )) as DcInboundMessage[];
      const fresh = page.filter((m) => isSnowflake(m.id) && BigInt(m.id) > floor);
      got.push(...fresh);
      // A short page, or one reaching the cursor, is the last.
      if (page.length < PAGE || fresh.length < page.length) break;
      if (got.length >= MAX_PER_CHANNEL) {
        more = true;
        break;
      }
      before = page.reduce((a, m) => (BigInt(m.id) < BigInt(a) ? m.id : a), page[0]!.id);
    }
    if (signal.aborted) return undefined;
    if (!got.length) {
      done();
      return [];
    }
    // Cut short above the cursor: messages after the cursor are left out (a re-read below it leaves out none).
    if (more && got.every((m) => BigInt(m.id) > BigInt(cursor)))
      this.o.log.warn(
        `chatC: ${MAX_PER_CHANNEL} messages or more in channel ${channelId} since it was last read; the newest ${MAX_PER_CHANNEL} are caught up, the older ones are not.`,
      );
    const ascending = got.sort((x, y) => (BigInt(x.id) < BigInt(y.id) ? -1 : 1)).slice(-MAX_PER_CHANNEL);
    const fresh = this.o.record(channelId, ascending, ascending.at(-1)!.id);
    this.caughtUp += fresh.length;
    done();
    return fresh;
  }
}
