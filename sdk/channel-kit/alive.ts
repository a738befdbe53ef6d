/**
 * When a channel was last known to be connected: the kv value `alive` (epoch ms) in its store, written when a
 * connection comes up, every minute while it is up, and at a clean stop. After a new connection it says since when
 * messages may have been said that nothing delivered: a channel reads its chats with no history cursor (chats Keel
 * never heard from) from that time, less a margin (`floor`).
 *
 * @example
 * const alive = new AliveMark({ store, log, connected: () => up, channel: 'chatD' });
 * alive.start();
 * const since = alive.last(); // at a new connection; then alive.hold() until what was said since is read,
 * // then alive.release() (or alive.mark(true) when there is nothing to read)
 */
import { errorMessage } from '../errors.js';
import type { Logger } from '../types.js';
import type { ChannelStore } from './store.js';

/** The kv key of the mark. */
export const ALIVE_KEY = 'alive';
/** How often the mark is written while connected. */
export const ALIVE_EVERY_MS = 60_000;
/**
 * Chats without a cursor are read from this long before the mark: the minute since it was last written, and
 * clock skew between this machine and the platform.
 */
export const ALIVE_MARGIN_MS = 60_000;

export interface AliveMarkOptions {
  store: ChannelStore;
  log: Logger;
  /** Whether the connection is up now. */
  connected(): boolean;
  /** The channel's name, for the debug line of a failed write. */
  channel: string;
}

export class AliveMark {
  private timer: NodeJS.Timeout | undefined;
  /** While held, the mark is not moved (a catch-up from it is not done yet). */
  private held = false;

  constructor(private readonly o: AliveMarkOptions) {}

  /** Writes the mark every minute while connected. */
  start(): void {
    clearInterval(this.timer);
    this.timer = setInterval(() => this.mark(), ALIVE_EVERY_MS);
    this.timer.unref();
  }

  /** Stops the minutely mark and writes it once more if connected (a clean stop). */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.mark();
  }

  /**
   * Keeps the mark where it is until `release()`: a new connection's catch-up of chats without a cursor reads from it,
   * and if the process stops or dies before that catch-up is done, the next start must read from there again, not
   * from the time of this connection.
   */
  hold(): void {
    this.held = true;
  }

  /** The catch-up from the mark is done (or there was none to do): the mark moves again, to now when connected. */
  release(connected = this.o.connected()): void {
    this.held = false;
    this.mark(connected);
  }

  /** Writes the mark (now) when connected and not held (`connected`: what the caller knows better than `connected()`). */
  mark(connected = this.o.connected()): void {
    if (this.held || !connected || !this.o.store.db.isOpen) return;
    try {
      this.o.store.setValue(ALIVE_KEY, String(Date.now()));
    } catch (e) {
      this.o.log.debug(`${this.o.channel}: could not note the time: ${errorMessage(e)}`);
    }
  }

  /**
   * When the channel was last known connected (epoch ms): the mark, else `fallback()` (e.g. the newest cursor's time,
   * for a store written before the mark existed); undefined on a first start, when there is no gap to read.
   */
  last(fallback?: () => number | undefined): number | undefined {
    const alive = Number(this.o.store.getValue(ALIVE_KEY));
    if (Number.isFinite(alive) && alive > 0) return alive;
    return fallback?.();
  }
}
