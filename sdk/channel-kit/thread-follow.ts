/**
 * The threads a channel's bot takes part in, so that with auto-reply off a reply there is answered without a new
 * mention (chatD's Slack threads, chatC's Discord threads). A thread is an opaque key the channel chooses
 * (`<channel>:<thread ts>` on Slack, the thread channel's id on Discord). It counts when:
 * - a message addressed to the bot was recorded in it (or as its first message): `entry(thread)` is written in the
 *   transaction that records that message, as `part:<thread>` in the channel's `kit.db`, so it holds across restarts;
 * - the bot posted in it, or it hangs under one of the bot's own messages (`posted(thread)`): the last 2,000 such
 *   threads, in memory.
 * A thread not taken part in for 7 days is no longer followed; `prune()` deletes its entry.
 *
 * @example
 * const threads = new ThreadFollow(store, () => setting(ctx, 'chatDFollowThreads', true) === true);
 * await ingress.recordSoon(item, [cursor, ...(addressed ? [threads.entry(`${channel}:${threadTs}`)] : [])]);
 * const mentioned = mentionsBot || (inThread && threads.follows(`${channel}:${threadTs}`));
 */
import { SWEEP_ACTIVE_MS } from './history-rounds.js';
import type { ChannelStore } from './store.js';

const PREFIX = 'part:';
/** The kv key of a thread the bot takes part in. */
export const partKey = (thread: string) => `${PREFIX}${thread}`;
/** Threads of the bot's own messages kept in memory. */
const OWN_MAX = 2000;

export class ThreadFollow {
  /** Thread → when the bot last posted there or under it (epoch ms), oldest first. */
  private readonly own = new Map<string, number>();

  constructor(
    private readonly store: ChannelStore,
    private readonly enabled: () => boolean,
  ) {}

  /** The kv entry to write with the record of a message addressed to the bot in `thread` (or starting it). */
  entry(thread: string): { key: string; value: () => string } {
    return { key: partKey(thread), value: () => String(Date.now()) };
  }

  /** The bot posted in `thread`, or a message a thread `thread` may hang under. */
  posted(thread: string): void {
    this.own.delete(thread);
    this.own.set(thread, Date.now());
    if (this.own.size > OWN_MAX) this.own.delete(this.own.keys().next().value!);
  }

  /** Whether a reply in `thread` counts as addressed to the bot. */
  follows(thread: string): boolean {
    if (!this.enabled()) return false;
    const since = Date.now() - SWEEP_ACTIVE_MS;
    const own = this.own.get(thread);
    if (own !== undefined && own >= since) return true;
    return Number(this.store.getValue(partKey(thread)) ?? 0) >= since;
  }

  /** Deletes the entries of threads not taken part in for 7 days. */
  prune(): void {
    const since = Date.now() - SWEEP_ACTIVE_MS;
    for (const { key, value } of this.store.values(PREFIX)) if (!(Number(value) >= since)) this.store.deleteValue(key);
  }
}
