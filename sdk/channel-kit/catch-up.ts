/**
 * One catch-up from a chat platform's history, the same for every channel: what a connection missed is read after
 * each chat's cursor (`last:<chat>` in the channel's store, the newest message recorded there) and recorded like
 * live messages (the ingress drops what it has). The platform supplies only a `CatchUpAdapter`: how to read a page of
 * history after a cursor, how its cursors compare, how to record what was read, what its errors and rate limits
 * look like, and the words of its log lines.
 *
 * - After every new connection (`afterConnect`), every chat with a cursor is read, the most recently active first
 *   (at most `maxChats`); their live messages wait meanwhile (`gate`), and a chat a live message waits for is read
 *   next. A round still running is cut short.
 * - Every `interval()` seconds a sweep reads the `SWEEP_CHATS` most recently active chats of the last 7 days, each
 *   from where this connection's previous read of it ended (a message dropped between delivered ones is found too).
 *   A message older than a minute a sweep finds in a chat followed live on this connection is one the connection
 *   should have delivered: the connection is rebuilt, with one warning.
 * - A chat whose history is still to be read on this connection, is being read, or whose read was cut short is
 *   `behind`: its live messages are recorded without moving its cursor (so a failed read is tried again from where
 *   it was), and the pages a failed read got are kept, the next read going on below them.
 * - After a gap (the kit's `alive` mark, `adapter.newcomers`), chats Keel never heard from are found by the platform
 *   (at once, or by calls during the round: their live messages wait until the list is in) and read from the mark.
 * - Each call is bounded in time; a rate limit is waited out once per round (Retry-After), then ends the round with
 *   one warning; a failed read keeps the cursor and is warned about once per chat and error; at most `maxPerChat`
 *   messages of a chat per read (the newest), with one warning.
 *
 * @example
 * const catchUp = new HistoryCatchUp({ store, log, signal, interval: () => 300, connected, rebuild, adapter });
 * catchUp.start();
 * // on connect: catchUp.afterConnect(); on a live message: catchUp.live(chat); const wait = catchUp.gate(chat);
 */
import { bounded, sleep } from '../retry.js';
import type { Logger } from '../types.js';
import { ALIVE_MARGIN_MS, AliveMark } from './alive.js';
import { HISTORY_CALL_TIMEOUT_MS, HistoryRounds, SWEEP_ACTIVE_MS, SWEEP_CHATS, UNDELIVERED_AFTER_MS } from './history-rounds.js';
import type { ChannelStore } from './store.js';

/** The kv key of a chat's history cursor. */
export const historyCursorKey = (chat: string) => `last:${chat}`;

/** What a read of one chat may use: the round's signal, bounded (rate-limited) calls, where a read starts. */
export interface CatchUpContext {
  /** Aborted when the round is cut short or the channel stops. */
  readonly signal: AbortSignal;
  /** Whether this is a sweep (not the round after a connection). */
  readonly sweep: boolean;
  /** One platform call: bounded in time; a rate limit (`adapter.retryAfter`) is waited out once per round, then thrown. */
  call<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T>;
  /**
   * Where a read of `key` (a chat's, or another cursor's, e.g. a thread's) starts: `cursor`, or on a sweep the older
   * place this connection's previous read of it ended.
   */
  from(key: string, cursor: string): string;
}

/** One page of a chat's history (newest first), and the token of the next (older) page, if there is one. */
export interface HistoryPage<M> {
  messages: M[];
  next?: string;
}

/** What recording one chat's read gave. */
export interface CatchUpRecorded<E> {
  /** The messages that were new (not recorded live already). */
  fresh: E[];
  /** Other cursor keys the read read (e.g. threads): a sweep reads each from where it is now. */
  readKeys?: string[];
  /** An error met after recording (e.g. a rate limit reading a thread): thrown once the read is noted. */
  error?: unknown;
}

/** Chats without a cursor to read after a gap, from the mark (`floor`). */
export interface CatchUpNewcomers {
  /** Found at once (e.g. listed by the connection's first event). */
  now?: string[];
  /**
   * Found by platform calls at the start of the round; the live messages of chats without a cursor wait until then.
   * `known`: the chats read anyway.
   */
  later?: (ctx: CatchUpContext, known: Set<string>) => Promise<string[]>;
}

export interface CatchUpAdapter<M, E> {
  /** The channel's name, the first word of each log line ('chatD'). */
  readonly name: string;
  /** What a chat is called in a log line ('conversation', 'channel'). */
  readonly word: string;
  /** Whether a stored value is a cursor of this platform (a Slack ts, a snowflake). */
  isCursor(value: string): boolean;
  /** Whether a chat id with a cursor is one to read (default: all). */
  isChat?(chat: string): boolean;
  /** Whether cursor `a` is strictly newer than cursor `b` (both valid). */
  newer(a: string, b: string): boolean;
  /** Epoch ms of a cursor. */
  cursorMs(cursor: string): number;
  /** The least cursor of epoch ms `ms` (a message written then or later is not older). */
  cursorAt(ms: number): string;
  /** A history message's cursor (its ts, its id), undefined when it has none. */
  idOf(message: M): string | undefined;
  /**
   * One page of `chat`'s history after `after` (exclusive), newest first: below `below` when given (a read going on
   * below what a failed one got), from `token` (a previous page's `next`). Throws the platform's error.
   */
  page(chat: string, q: { after: string; below?: string; token?: string }, ctx: CatchUpContext): Promise<HistoryPage<M>>;
  /**
   * Records `messages` (oldest first, after the cursor; may be none) and moves the chat's cursor, with whatever more the
   * platform reads with them (e.g. threads). Undefined: cut short before anything was recorded.
   */
  record(chat: string, messages: M[], ctx: CatchUpContext): Promise<CatchUpRecorded<E> | undefined>;
  /** Epoch ms a recorded message was written. */
  eventMs(event: E): number;
  /** Seconds the platform asks to wait, when `e` is a rate limit; else undefined. */
  retryAfter?(e: unknown): number | undefined;
  /** An error for a log line: a code, never a secret. */
  describe(e: unknown): string;
  /**
   * After a gap since `since` (the mark; `floor`: the cursor to read newcomers from; `first`: the first connection
   * since start): the chats without a cursor to read; undefined when this connection is no gap to look for them.
   */
  newcomers?(since: number, floor: string, first: boolean): CatchUpNewcomers | undefined;
  /** A round starts (after the newcomers are found). */
  beginRound?(sweep: boolean): void;
  /** The round ended (not stopped): its figures, for the platform's log lines. */
  roundEnded?(r: CatchUpSummary): void;
  /** Log lines (each starting with the channel's name). */
  readonly lines: {
    /** A read failed (warned once per chat and error). */
    failed(chat: string, code: string, sweep: boolean): string;
    /** More than `max` messages since the cursor: the newest `max` are read. */
    tooMany(chat: string, max: number): string;
    /** A sweep found `n` messages the connection should have delivered, in `chats`. */
    undelivered(n: number, chats: string[]): string;
    /** Why the connection is rebuilt then. */
    rebuildReason(n: number): string;
    /** More chats with a cursor than `maxChats` (the rest since `sinceIso` are read). */
    tooManyChats?(all: number, max: number, sinceIso: string): string;
    /** Waiting out a rate limit. */
    rateWait?(seconds: number): string;
    /** A rate limit ended the round. */
    rateLimited?(chat: string): string;
  };
}

/** The figures of one round. */
export interface CatchUpSummary {
  sweep: boolean;
  /** Chats read, of the `listed` ones (newcomers not counted in `listed`). */
  read: number;
  listed: number;
  /** New messages recorded, and in how many chats. */
  messages: number;
  chats: number;
  /** New messages of chats without a cursor (newcomers), and newcomers not read (the round ended before them). */
  newFound: number;
  unread: number;
  /** The round was cut short (a new connection). */
  cutShort: boolean;
}

export interface HistoryCatchUpOptions<M, E> {
  store: ChannelStore;
  log: Logger;
  /** Aborted when the channel stops. */
  signal: AbortSignal;
  /** Seconds between sweeps, asked before each wait (0: none). */
  interval(): number;
  /** Whether the connection is up now. */
  connected(): boolean;
  /** Rebuilds the connection (the supervisor's `restart`). */
  rebuild(reason: string): void;
  adapter: CatchUpAdapter<M, E>;
  /** At most this many messages of one chat per read (the newest after the cursor). */
  maxPerChat: number;
  /** At most this many chats with a cursor after a connection, the most recently active (default: all). */
  maxChats?: number;
  /** Chats read at the same time (default 1). */
  readers?: number;
  /** A Retry-After longer than this (seconds) ends the round at once (default 60). */
  maxRetryAfterS?: number;
  /**
   * Whether a sweep reads the chats still behind first (true), or leaves the chats due since the connection to the
   * next connection (false).
   */
  sweepBehind: boolean;
}

type Rate = { waited: boolean; limited: boolean };

export class HistoryCatchUp<M, E> {
  /** ISO time the last round ended. */
  lastCatchUpAt: string | undefined;
  /** Messages recorded by catch-ups since start (not already recorded live). */
  caughtUp = 0;
  /** Connections since start. */
  connection = 0;

  private readonly rounds: HistoryRounds;
  private readonly alive: AliveMark;
  private readonly a: CatchUpAdapter<M, E>;
  /** Chats followed live on this connection (emptied at each connection). */
  private readonly followed = new Map<string, number>();
  /** Chats with a cursor at this connection whose history has not been read on it yet. */
  private due = new Set<string>();
  /** Reads cut short (newest pages first): the messages got so far, after `oldest` and below `below`. */
  private readonly partial = new Map<string, { oldest: string; below: string; messages: M[] }>();
  /** Chat (or other cursor key) → its cursor when this connection last read it: a sweep reads from there. */
  private readonly readTo = new Map<string, string>();
  /** Chats being read now. */
  private readonly reading = new Set<string>();
  /** Chat → the error last warned about (warned once until it reads again). */
  private readonly warned = new Map<string, string>();
  private rateWarned = false;
  /** Chats without a cursor to read on this connection: the cursor to read from (the mark, less a margin). */
  private readonly startAt = new Map<string, string>();

  constructor(private readonly o: HistoryCatchUpOptions<M, E>) {
    this.a = o.adapter;
    this.rounds = new HistoryRounds({ signal: o.signal, interval: o.interval, connected: o.connected, onSweep: () => this.sweep() });
    this.alive = new AliveMark({ store: o.store, log: o.log, connected: o.connected, channel: o.adapter.name });
  }

  /** Starts the periodic sweeps, and the minutely `alive` mark while connected. */
  start(): void {
    this.rounds.start();
    this.alive.start();
  }

  /** Stops the sweeps and the round in progress (live messages waiting are let through), noting the time if connected. */
  stop(): Promise<void> {
    this.alive.stop();
    return this.rounds.stop();
  }

  /** A live message of `chat`: unless its history is still due on this connection, it counts as followed live. */
  live(chat: string): void {
    if (!this.due.has(chat)) this.followed.set(chat, this.connection);
  }

  /** Whether `chat` had a cursor at this connection (or was found as a newcomer) and is not read on it yet. */
  isDue(chat: string): boolean {
    return this.due.has(chat);
  }

  /** How many chats count as followed (for tests and diagnostics). */
  get followedCount(): number {
    return this.followed.size;
  }

  /** Whether the history of `chat` is still to be read, is being read, or a read was cut short: live messages leave its cursor. */
  behind(chat: string): boolean {
    return this.due.has(chat) || this.partial.has(chat) || this.reading.has(chat);
  }

  /**
   * While the history of `chat` is due or being read, a promise that resolves once it is recorded (and that chat is
   * read next); else undefined. While newcomers are being listed, a chat without a cursor waits for the list first.
   */
  gate(chat: string): Promise<void> | undefined {
    return this.rounds.gates.gate(chat, () => this.o.store.getValue(historyCursorKey(chat)) === undefined);
  }

  /**
   * After a new connection: reads every chat with a cursor (and newcomers after a gap); their live messages wait from
   * now until their history is recorded. A round still running is cut short. Returns the connection's number.
   */
  afterConnect(): number {
    const connection = ++this.connection;
    this.readTo.clear();
    this.startAt.clear();
    this.followed.clear();
    const chats = this.chats(true);
    const since = this.alive.last(() => (chats[0] ? this.a.cursorMs(chats[0].cursor) : undefined));
    const floor = since === undefined ? '' : this.a.cursorAt(since - ALIVE_MARGIN_MS);
    const plan = since === undefined ? undefined : this.a.newcomers?.(since, floor, connection === 1);
    // The mark stays until the chats without a cursor are read from it (a stop or a crash before then reads them
    // from it again at the next start).
    if (plan) this.alive.hold();
    else this.alive.release(true);
    const now = plan?.now ?? [];
    for (const c of now) this.startAt.set(c, floor);
    const list = [...chats.map((c) => c.chat), ...now];
    this.due = new Set(list);
    // Until the list is in, live messages of chats without a cursor wait (one may be among those to read).
    if (plan?.later) this.rounds.gates.listing();
    else this.rounds.gates.listed();
    this.rounds.afterConnect(list, async (held, signal) => {
      await this.runRound(false, list, held, connection, signal, plan && { ...plan, floor });
    });
    return connection;
  }

  /** A periodic sweep, unless a round is running or the connection is down. */
  sweep(): void {
    if (this.rounds.busy) return;
    const since = Date.now() - SWEEP_ACTIVE_MS;
    const all = this.chats(false);
    const active = (c: { chat: string; cursor: string }) => this.a.cursorMs(c.cursor) >= since;
    const list = (
      this.o.sweepBehind
        ? [...all.filter((c) => this.behind(c.chat)), ...all.filter((c) => !this.behind(c.chat) && active(c))]
        : all.filter((c) => !this.due.has(c.chat) && active(c))
    )
      .slice(0, SWEEP_CHATS)
      .map((c) => c.chat);
    const connection = this.connection;
    this.rounds.sweep((held, signal) => this.runRound(true, list, held, connection, signal));
  }

  /** Chats with a cursor, the most recently active first, at most `maxChats` (the rest said, when `warn`). */
  private chats(warn: boolean): Array<{ chat: string; cursor: string }> {
    const prefix = historyCursorKey('');
    const all = this.o.store
      .values(prefix)
      .map(({ key, value }) => ({ chat: key.slice(prefix.length), cursor: value }))
      .filter((c) => this.a.isCursor(c.cursor) && (this.a.isChat?.(c.chat) ?? true))
      .sort((x, y) => (x.cursor === y.cursor ? 0 : this.a.newer(x.cursor, y.cursor) ? -1 : 1));
    const max = this.o.maxChats;
    if (max === undefined || all.length <= max) return all;
    if (warn && this.a.lines.tooManyChats)
      this.o.log.warn(this.a.lines.tooManyChats(all.length, max, new Date(this.a.cursorMs(all[max - 1]!.cursor)).toISOString()));
    return all.slice(0, max);
  }

  private async runRound(
    sweep: boolean,
    list: string[],
    held: Set<string>,
    connection: number,
    signal: AbortSignal,
    plan?: CatchUpNewcomers & { floor: string },
  ): Promise<void> {
    const rate: Rate = { waited: false, limited: false };
    const gates = this.rounds.gates;
    const rest = [...list];
    const newcomers = [...(plan?.now ?? [])];
    if (plan?.later) {
      try {
        const found = await plan.later(this.context(sweep, signal, rate), new Set(rest));
        for (const c of found) {
          this.startAt.set(c, plan.floor);
          this.due.add(c);
          gates.hold(c, held);
        }
        newcomers.push(...found);
        rest.push(...found);
      } finally {
        // Held from here on (those to read), or let go (the others).
        if (connection === this.connection) gates.listed();
      }
    }
    this.a.beginRound?.(sweep);
    let read = 0;
    let messages = 0;
    let chats = 0;
    let newFound = 0;
    let ended = false;
    const undelivered = new Map<string, number>();
    const worker = async () => {
      while (rest.length && !signal.aborted && !ended) {
        // A chat a live message waits for goes first.
        const chat = gates.next(rest);
        if (sweep) gates.hold(chat, held);
        // Followed live on this connection before this read: what the read finds now, the connection should have brought.
        const wasFollowed = this.followed.get(chat) === connection && !this.due.has(chat);
        try {
          // A sweep does not hold a chat's live messages through a Retry-After wait (a connection's round does: what
          // was said before the connection must come first).
          const waiting = sweep ? { begin: () => gates.unhold(chat, held), end: () => gates.hold(chat, held) } : undefined;
          this.reading.add(chat);
          const fresh = await this.readChat(chat, this.context(sweep, signal, rate, waiting)).finally(() => this.reading.delete(chat));
          if (fresh === undefined) {
            ended = true; // stopped, or cut short
            return;
          }
          read++;
          messages += fresh.length;
          if (fresh.length) chats++;
          if (newcomers.includes(chat)) newFound += fresh.length;
          if (this.warned.delete(chat)) this.o.log.info(`${this.a.name}: the history of ${this.a.word} ${chat} can be read again.`);
          if (connection === this.connection) this.followed.set(chat, connection);
          if (sweep && wasFollowed) {
            const late = fresh.filter((m) => Date.now() - this.a.eventMs(m) > UNDELIVERED_AFTER_MS).length;
            if (late) undelivered.set(chat, late);
          }
        } catch (e) {
          if (signal.aborted) return;
          if (this.a.retryAfter?.(e) !== undefined) {
            rate.limited = true;
            this.rateLimited(chat);
            ended = true; // the same limit holds for every chat: the rest wait for the next round
            return;
          }
          this.failed(chat, e, sweep);
        } finally {
          // A chat without a cursor is read once, from the mark: not again (it would be read from nowhere).
          if (this.startAt.delete(chat)) this.done(chat);
          gates.unhold(chat, held);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(this.o.readers ?? 1, rest.length)) }, worker));
    const unread = newcomers.filter((c) => this.startAt.delete(c));
    for (const c of unread) this.done(c);
    if (this.o.signal.aborted) return;
    // What was said while Keel was away is read (or was reported as not read): the mark moves again.
    if (plan && connection === this.connection && !signal.aborted) this.alive.release(this.o.connected());
    if (!rate.limited) this.rateWarned = false;
    this.lastCatchUpAt = new Date().toISOString();
    this.a.roundEnded?.({ sweep, read, listed: list.length, messages, chats, newFound, unread: unread.length, cutShort: signal.aborted });
    const n = [...undelivered.values()].reduce((x, y) => x + y, 0);
    if (n && connection === this.connection && this.o.connected()) {
      const where = [...undelivered.keys()];
      this.o.log.warn(this.a.lines.undelivered(n, where));
      this.o.rebuild(this.a.lines.rebuildReason(n));
    }
  }

  private context(sweep: boolean, signal: AbortSignal, rate: Rate, waiting?: { begin(): void; end(): void }): CatchUpContext {
    return {
      signal,
      sweep,
      call: (fn) => this.call(fn, signal, rate, waiting),
      from: (key, cursor) => {
        const to = sweep ? this.readTo.get(key) : undefined;
        return to !== undefined && this.a.isCursor(to) && this.a.newer(cursor, to) ? to : cursor;
      },
    };
  }

  /**
   * Reads a chat's history after its cursor and records it (the adapter's `record`). Returns the new messages, or
   * undefined when the round was cut short before anything was recorded. Throws the platform's error (nothing
   * recorded, the cursor stays), or the error `record` met after recording.
   */
  private async readChat(chat: string, ctx: CatchUpContext): Promise<E[] | undefined> {
    // A chat without a cursor found after a gap is read from the mark (and from there even if a live message gave it
    // a cursor meanwhile: the ingress drops what it has).
    const cursor = this.startAt.get(chat) ?? this.o.store.getValue(historyCursorKey(chat));
    if (!cursor || !this.a.isCursor(cursor)) {
      this.done(chat);
      return [];
    }
    const kept = await this.readHistory(chat, ctx.from(chat, cursor), cursor, ctx);
    if (ctx.signal.aborted) return undefined;
    const r = await this.a.record(chat, kept, ctx);
    if (r === undefined) return undefined;
    this.caughtUp += r.fresh.length;
    this.done(chat);
    this.readTo.set(chat, this.o.store.getValue(historyCursorKey(chat)) ?? cursor);
    for (const key of r.readKeys ?? []) {
      const at = this.o.store.getValue(key);
      if (at) this.readTo.set(key, at);
    }
    if (r.error !== undefined) throw r.error;
    return r.fresh;
  }

  /**
   * The chat's messages after `oldest` (the newest `maxPerChat`, returned oldest first; `cursor`: the chat's cursor,
   * for the warning when messages after it are left out). Throws the platform's error; the pages got before it are
   * kept, and the next read goes on below them.
   */
  private async readHistory(chat: string, oldest: string, cursor: string, ctx: CatchUpContext): Promise<M[]> {
    const max = this.o.maxPerChat;
    // A read cut short before goes on below what it got (the same cursor: nothing was recorded meanwhile).
    const before = this.partial.get(chat);
    const resume = before?.oldest === oldest ? before : undefined;
    const messages: M[] = resume ? resume.messages : [];
    this.partial.delete(chat);
    let token: string | undefined;
    let more = false;
    for (;;) {
      let page: HistoryPage<M>;
      try {
        page = await this.a.page(chat, { after: oldest, ...(resume ? { below: resume.below } : {}), ...(token ? { token } : {}) }, ctx);
      } catch (e) {
        // Nothing is recorded (that would move the cursor past what is not read yet); the pages got so far are kept.
        const last = messages.length ? this.a.idOf(messages.at(-1)!) : undefined;
        if (last) this.partial.set(chat, { oldest, below: last, messages });
        throw e;
      }
      for (const m of page.messages) {
        const id = this.a.idOf(m);
        if (id !== undefined && this.a.isCursor(id) && this.a.newer(id, oldest)) messages.push(m);
      }
      token = page.next;
      more = token !== undefined;
      if (!more || messages.length >= max) break;
    }
    // Cut short above the cursor: messages after it are left out (a re-read below it leaves out none).
    if (more && messages.every((m) => this.a.newer(this.a.idOf(m)!, cursor))) this.o.log.warn(this.a.lines.tooMany(chat, max));
    // Newest first: the newest `max` after the cursor are kept.
    return messages.slice(0, max).sort((x, y) => (this.a.newer(this.a.idOf(x)!, this.a.idOf(y)!) ? 1 : -1));
  }

  /** The chat's history is read (and recorded): its live messages move its cursor again. */
  private done(chat: string): void {
    this.due.delete(chat);
    this.partial.delete(chat);
  }

  /** One platform call, bounded in time; a rate limit is waited out once per round (Retry-After), then thrown. */
  private async call<T>(
    fn: (signal: AbortSignal) => Promise<T>,
    signal: AbortSignal,
    rate: Rate,
    waiting?: { begin(): void; end(): void },
  ): Promise<T> {
    for (;;) {
      try {
        return await bounded(fn(signal), HISTORY_CALL_TIMEOUT_MS, signal);
      } catch (e) {
        const wait = this.a.retryAfter?.(e);
        if (wait === undefined || rate.waited || wait > (this.o.maxRetryAfterS ?? 60) || signal.aborted) throw e;
        rate.waited = true;
        if (this.a.lines.rateWait) this.o.log.info(this.a.lines.rateWait(wait));
        waiting?.begin();
        try {
          await sleep(wait * 1000, signal);
        } finally {
          waiting?.end();
        }
      }
    }
  }

  /** A read that failed: a warning, once per chat and error until the chat is read again. */
  private failed(chat: string, e: unknown, sweep: boolean): void {
    const code = this.a.describe(e);
    if (this.warned.get(chat) === code) {
      this.o.log.debug(`${this.a.name}: the history of ${this.a.word} ${chat} still cannot be read (${code}).`);
      return;
    }
    this.warned.set(chat, code);
    this.o.log.warn(this.a.lines.failed(chat, code, sweep));
  }

  /** A rate limit ended the round: warned once until a round ends without one. */
  private rateLimited(chat: string): void {
    const line = this.a.lines.rateLimited?.(chat) ?? `${this.a.name}: rate-limited reading the history of ${this.a.word} ${chat}.`;
    if (this.rateWarned) this.o.log.debug(line);
    else this.o.log.warn(line);
    this.rateWarned = true;
  }
}
