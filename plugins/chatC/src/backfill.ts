/**
 * Catch-up after a new gateway session. Discord replays missed events only to a RESUME of the same session; a new
 * session (Keel restarted, or the session was invalidated) starts with what is said from then on. So each channel
 * the bot has heard from keeps a cursor (the newest message id recorded, stored with the ingress record in one
 * transaction), and after READY the history after that cursor is read (`GET /channels/:id/messages?after=`) and
 * recorded like gateway messages; the ingress drops what it already has.
 */
import type { REST } from 'discord.js';
import { errorMessage, type Logger } from '../../../sdk/index.js';
import type { ChannelStore } from '../../../sdk/channel-kit/index.js';
import type { DcInboundMessage } from './inbound.js';

const PREFIX = 'last:';
/**
 * At most this many messages per channel are fetched in one catch-up, the oldest after the cursor first (newer ones
 * beyond it, sent before the first live message, are not fetched).
 */
const MAX_PER_CHANNEL = 500;

export const cursorKey = (channelId: string) => `${PREFIX}${channelId}`;

/** The newer of two snowflakes (undefined counts as oldest). */
export function newer(a: string | undefined, b: string): string {
  return a === undefined || BigInt(b) > BigInt(a) ? b : a;
}

export async function backfill(
  rest: REST,
  store: ChannelStore,
  log: Logger,
  record: (messages: DcInboundMessage[]) => void,
  signal: AbortSignal,
): Promise<number> {
  let total = 0;
  for (const { key, value } of store.values(PREFIX)) {
    const channelId = key.slice(PREFIX.length);
    let after = value;
    try {
      for (let fetched = 0; fetched < MAX_PER_CHANNEL && !signal.aborted; ) {
        const page = (await rest.get(`/channels/${channelId}/messages`, {
          query: new URLSearchParams({ after, limit: '100' }),
          signal,
        })) as DcInboundMessage[];
        if (!page.length) break;
        const ascending = [...page].sort((x, y) => (BigInt(x.id) < BigInt(y.id) ? -1 : 1));
        record(ascending);
        fetched += page.length;
        total += page.length;
        after = ascending.at(-1)!.id;
        if (page.length < 100) break;
      }
    } catch (e) {
      if (!signal.aborted) log.warn(`chatC: could not read the history of channel ${channelId} after a new session: ${errorMessage(e)}`);
    }
  }
  return total;
}
