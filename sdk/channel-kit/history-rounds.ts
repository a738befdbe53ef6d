/**
 * When a channel reads its history to catch up, and never twice at once: a round after every new connection (it
 * holds every chat it will read from the start, and cuts short a round still running), and periodic sweeps every
 * `interval()` seconds (skipped while a round runs or the connection is down; 0: none, asked again in a minute and
 * when a wait ends).
 * What a round reads, and how, is the channel's; the live messages of the chats it reads wait at `gates`.
 *
 * @example
 * const rounds = new HistoryRounds({ signal, interval: () => 300, connected: () => up, sweep: () => sweep() });
 * rounds.afterConnect(chats, (held, signal) => readAll(chats, held, signal));
 * const sweep = () => rounds.sweep((held, signal) => readSome(recent(), held, signal));
 */
import { linkSignals } from '../retry.js';
import { HistoryGates } from './history-gates.js';

/** A periodic sweep reads at most this many chats, the most recently active first ... */
export const SWEEP_CHATS = 50;
/** ... of those whose newest recorded message is at most this old. */
export const SWEEP_ACTIVE_MS = 7 * 24 * 3600 * 1000;
/**
 * A message a sweep finds that is older than this is one the connection should have delivered and did not (the
 * platforms' delivery lag is seconds): the connection is rebuilt.
 */
export const UNDELIVERED_AFTER_MS = 60_000;
/** A history request that takes longer is given up (its chat stays behind). */
export const HISTORY_CALL_TIMEOUT_MS = 30_000;

/** A round: reads its chats, letting each go from `held` once read (`gates.unhold`); stops when `signal` aborts. */
export type HistoryRound = (held: Set<string>, signal: AbortSignal) => Promise<void>;

export interface HistoryRoundsOptions {
  /** Aborted when the channel stops. */
  signal: AbortSignal;
  /** Seconds between sweeps, asked before each wait (0: none). */
  interval(): number;
  /** Whether the connection is up now. */
  connected(): boolean;
  /** Called every `interval()` seconds: the channel starts its sweep (with `sweep(run)`). */
  onSweep(): void;
}

export class HistoryRounds {
  /** Live messages of the chats being caught up wait here. */
  readonly gates = new HistoryGates();
  /** The round running or queued; the one running can be cut short by a new connection. */
  private running: Promise<void> | undefined;
  private round: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private generation = 0;

  constructor(private readonly o: HistoryRoundsOptions) {}

  /** Starts the periodic sweeps. */
  start(): void {
    this.schedule();
  }

  /** Whether a round is running (or queued). */
  get busy(): boolean {
    return this.running !== undefined;
  }

  /**
   * After a new connection: `chats` are held from now, the round running is cut short, and `run` starts once it
   * ended (unless another connection came meanwhile). Every chat still held when `run` ends is let go.
   */
  afterConnect(chats: string[], run: HistoryRound): void {
    if (this.stopped) return;
    const generation = ++this.generation;
    const held = new Set<string>();
    for (const c of chats) this.gates.hold(c, held);
    this.round?.abort(new Error('a new connection'));
    const prev = this.running ?? Promise.resolve();
    const p = prev
      .catch(() => undefined)
      .then(() => (generation === this.generation && !this.stopped ? this.run(held, run) : undefined))
      .finally(() => {
        this.gates.releaseAll(held);
        if (this.running === p) this.running = undefined;
      });
    this.running = p;
  }

  /**
   * A sweep: `run` now, unless a round runs, the connection is down or the channel stopped (then false). A sweep
   * holds each chat only while it reads it (`gates.hold(chat, held)` before, `gates.unhold` after).
   */
  sweep(run: HistoryRound): boolean {
    if (this.stopped || this.running || !this.o.connected()) return false;
    const held = new Set<string>();
    const p = this.run(held, run).finally(() => {
      this.gates.releaseAll(held);
      if (this.running === p) this.running = undefined;
    });
    this.running = p;
    return true;
  }

  /** Stops the sweeps and the round in progress; live messages waiting for it are let through. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.round?.abort(new Error('stopping'));
    await this.running?.catch(() => undefined);
    this.gates.openAll();
  }

  private async run(held: Set<string>, fn: HistoryRound): Promise<void> {
    const ac = new AbortController();
    this.round = ac;
    const link = linkSignals([this.o.signal, ac.signal]);
    try {
      await fn(held, link.signal);
    } finally {
      link.dispose();
      if (this.round === ac) this.round = undefined;
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    const every = this.o.interval();
    // 0: no sweeps; the setting is looked at again in a minute.
    this.timer = setTimeout(
      () => {
        // Asked again: a sweep turned off meanwhile does not run.
        if (this.o.interval() > 0) this.o.onSweep();
        this.schedule();
      },
      (every > 0 ? every : 60) * 1000,
    );
    this.timer.unref();
  }
}
