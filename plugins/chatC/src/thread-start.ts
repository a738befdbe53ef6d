/**
 * The first message of a Discord thread, quoted for the agent when someone mentions the bot in the thread without
 * replying to a message (a reply quotes what it answers instead): as on Slack, what the thread is about. On Discord
 * a thread's id is its first message's id: the message it was started from (in the parent channel), or a forum
 * post's opening message (in the thread itself).
 *
 * Read from chatC's own ingress when Keel recorded it; else with REST (a forum post's message in the thread; then the
 * thread's parent, and the message there), 5 s for the whole lookup. The answers are kept ten minutes (500 threads).
 * A thread whose start cannot be read quotes nothing, and the message goes on without it.
 */
import type { REST } from '@discordjs/rest';
import { type Ingress, TtlCache } from '../../../sdk/channel-kit/index.js';
import { errorMessage, type Logger } from '../../../sdk/index.js';
import { linkSignals } from '../../../sdk/retry.js';
import type { DcPayload, DcReferencedMessage } from './inbound.js';

const KEEP_MS = 10 * 60_000;
const KEEP_MAX = 500;
const LOOKUP_MS = 5000;

export class ThreadStarts {
  private readonly kept = new TtlCache<string, DcReferencedMessage | undefined>(KEEP_MS, KEEP_MAX);

  constructor(
    private readonly o: {
      ingress: Pick<Ingress<DcPayload>, 'payload'>;
      rest: Pick<REST, 'get'>;
      log: Logger;
    },
  ) {}

  /** The first message of thread `threadId`; undefined when it cannot be read. */
  async of(threadId: string, stopping?: AbortSignal): Promise<DcReferencedMessage | undefined> {
    const recorded = this.o.ingress.payload(threadId);
    if (recorded && 'message' in recorded) return recorded.message;
    const hit = this.kept.get(threadId);
    if (hit) return hit.value;
    // One deadline for the whole lookup (up to three calls), and none past a stop.
    const deadline = AbortSignal.timeout(LOOKUP_MS);
    const link = linkSignals([stopping, deadline]);
    const { signal } = link;
    const get = (path: string) => this.o.rest.get(path as `/${string}`, { signal });
    try {
      let first: DcReferencedMessage | undefined;
      try {
        // A forum or media post: its opening message is in the thread, under the thread's id.
        first = (await get(`/channels/${threadId}/messages/${threadId}`)) as DcReferencedMessage;
      } catch (e) {
        if ((e as { status?: number }).status !== 404) throw e;
        // A thread started from a message: that message is in the parent channel.
        const thread = (await get(`/channels/${threadId}`)) as { parent_id?: string | null };
        if (thread.parent_id) first = (await get(`/channels/${thread.parent_id}/messages/${threadId}`)) as DcReferencedMessage;
      }
      this.kept.set(threadId, first);
      return first;
    } catch (e) {
      if ((e as { status?: number }).status === 404) {
        this.kept.set(threadId, undefined);
        return undefined;
      }
      this.o.log.debug(
        `chatC: the first message of thread ${threadId} could not be read (${errorMessage(e)}); the message goes on without it.`,
      );
      return undefined;
    } finally {
      link.dispose();
    }
  }
}
