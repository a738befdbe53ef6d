/**
 * The threads chatD takes part in. Slack has no "reply to a message" as Discord has: a thread is how people go on
 * talking to the bot, so with `chatDAutoReplyEnabled` false a reply in a thread the bot takes part in is answered
 * without a new mention (`chatDFollowThreads`, default true). A thread counts when:
 * - a message addressed to the bot (a mention) was recorded in it, or as its first message: kept in `kit.db` as
 *   `part:<channel>:<thread ts>` (always the thread's own ts, never a reply's), written in the transaction that
 *   records that message, so it survives a restart;
 * - the bot posted in it, or it hangs under one of the bot's own messages: the last 2,000 such threads, in memory.
 * A thread not taken part in for 7 days is no longer followed, and its entry is deleted at the next start.
 */
import { type ChannelStore, SWEEP_ACTIVE_MS } from '../../../sdk/channel-kit/index.js';
import type { SlackMessageEvent } from './inbound.js';

const PREFIX = 'part:';
/** The kv key of a thread the bot takes part in. */
export const partKey = (channel: string, threadTs: string) => `${PREFIX}${channel}:${threadTs}`;
/** Threads of the bot's own messages kept in memory. */
const OWN_MAX = 2000;

export class ThreadFollow {
  /** `<channel>:<thread ts>` → when the bot last posted there (epoch ms), oldest first. */
  private readonly own = new Map<string, number>();

  constructor(
    private readonly store: ChannelStore,
    private readonly enabled: () => boolean,
  ) {}

  /**
   * The kv entry to write with the record of `ev`, a message addressed to the bot outside a direct message: its
   * thread (or the thread it may start) is taken part in from now.
   */
  entryFor(ev: SlackMessageEvent): { key: string; value: () => string } {
    return { key: partKey(ev.channel, ev.thread_ts ?? ev.ts), value: () => String(Date.now()) };
  }

  /** The bot posted `ts` in `channel`: in `thread`, or as a message a thread may hang under. */
  posted(channel: string, ts: string, thread?: string): void {
    const key = `${channel}:${thread ?? ts}`;
    this.own.delete(key);
    this.own.set(key, Date.now());
    if (this.own.size > OWN_MAX) this.own.delete(this.own.keys().next().value!);
  }

  /** Whether a reply in thread `threadTs` of `channel` counts as addressed to the bot. */
  follows(channel: string, threadTs: string): boolean {
    if (!this.enabled()) return false;
    const since = Date.now() - SWEEP_ACTIVE_MS;
    const own = this.own.get(`${channel}:${threadTs}`);
    if (own !== undefined && own >= since) return true;
    return Number(this.store.getValue(partKey(channel, threadTs)) ?? 0) >= since;
  }

  /** Deletes the entries of threads not taken part in for 7 days. */
  prune(): void {
    const since = Date.now() - SWEEP_ACTIVE_MS;
    for (const { key, value } of this.store.values(PREFIX)) if (!(Number(value) >= since)) this.store.deleteValue(key);
  }
}
