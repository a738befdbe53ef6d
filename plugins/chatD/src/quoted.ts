/**
 * The first message of a Slack thread, quoted for the agent when someone mentions the bot in a reply there (Slack
 * has no reply to one message: a thread reply answers the thread's first message). Read from chatD's own ingress
 * when Keel recorded it, else with one `conversations.replies` call (scope `*:history`, which chatD already
 * needs); the answers are kept ten minutes (500 threads), so a busy thread costs one call. A failed lookup, or one
 * that takes over 5 s, quotes nothing, and the message goes on without it.
 */
import { type Ingress, TtlCache } from '../../../sdk/channel-kit/index.js';
import { errorMessage, type Logger, type QuotedMessage } from '../../../sdk/index.js';
import type { WebClient } from '@slack/web-api';
import { slackPlainText, type SlackItem } from './inbound.js';
import { within } from './names.js';

const KEEP_MS = 10 * 60_000;
const KEEP_MAX = 500;
/** The longest a reply waits for its thread's first message. */
const WAIT_MS = 5000;

/** What chatD reads of a Slack message to quote it. */
export interface SlackMessage {
  ts?: string;
  user?: string;
  bot_id?: string;
  text?: string;
  files?: Array<{ name?: string; title?: string }>;
}

/** A Slack `ts` (seconds.micros) as an ISO time, when it is one. */
export function tsToIso(ts: string | undefined): string | undefined {
  const s = Number(ts);
  return Number.isFinite(s) && s > 0 ? new Date(Math.floor(s * 1000)).toISOString() : undefined;
}

/**
 * A Slack message as the agent reads it quoted (`names`: people's names by member id, for its author and
 * mentions); undefined when it has neither text nor files.
 */
export function quoteOf(m: SlackMessage, botUserId: string | undefined, names?: ReadonlyMap<string, string>): QuotedMessage | undefined {
  const files = (m.files ?? []).map((f) => `[file: ${f.name ?? f.title ?? 'unnamed'}]`);
  const text = [slackPlainText(m.text ?? '', botUserId, names).trim(), ...files].filter(Boolean).join('\n');
  if (!text) return undefined;
  const fromBot = botUserId !== undefined && m.user === botUserId;
  const at = tsToIso(m.ts);
  const userName = m.user ? names?.get(m.user) : undefined;
  return { userId: m.user ?? '', ...(userName ? { userName } : {}), text, ...(fromBot ? { fromBot: true } : {}), ...(at ? { at } : {}) };
}

export class ThreadStarts {
  /** `channel:ts` → the thread's first message (undefined: none could be read). */
  private readonly kept = new TtlCache<string, SlackMessage | undefined>(KEEP_MS, KEEP_MAX);

  constructor(
    private readonly o: {
      ingress: Pick<Ingress<SlackItem>, 'payload'>;
      client: Pick<WebClient, 'conversations'>;
      log: Logger;
    },
  ) {}

  /** The first message of thread `threadTs` in `channel` (quote it with `quoteOf`); undefined when it cannot be read. */
  async of(channel: string, threadTs: string, signal?: AbortSignal): Promise<SlackMessage | undefined> {
    const key = `${channel}:${threadTs}`;
    const recorded = this.o.ingress.payload(key);
    if (recorded?.kind === 'message') return recorded.event;
    const hit = this.kept.get(key);
    if (hit) return hit.value;
    try {
      const r = await within(WAIT_MS, this.o.client.conversations.replies({ channel, ts: threadTs, limit: 1 }));
      if (signal?.aborted) return undefined;
      if (!r) {
        this.o.log.debug(
          `chatD: the first message of thread ${threadTs} in ${channel} took over ${WAIT_MS / 1000} s; the reply goes on without it.`,
        );
        return undefined;
      }
      const top = (r.messages as SlackMessage[] | undefined)?.[0];
      const first = top && top.ts === threadTs ? top : undefined;
      this.kept.set(key, first);
      return first;
    } catch (e) {
      this.o.log.debug(
        `chatD: the first message of thread ${threadTs} in ${channel} could not be read (${errorMessage(e)}); the reply goes on without it.`,
      );
      return undefined;
    }
  }
}
