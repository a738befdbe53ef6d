/**
 * Input handed to a running action through `agent:inbox` (a button press on a message it sent, an edit of the message
 * it came from), kept on record in the channel's durable store until the action has settled for good, so nothing a
 * platform was told we received is lost when the action's in-memory inbox is.
 */
import type { InboundMessage } from '../channel.js';
import { errorMessage } from '../errors.js';
import type { PluginContext } from '../plugin.js';
import type { ChannelStore } from './store.js';

const HANDED = 'handed:';

/**
 * Inputs handed to a running action, kept in the channel's durable store (`handed:<action id>:<message id>` → the
 * new message the input becomes if that action never gets to use it) from the hand-off until the action has settled
 * for good. The action's inbox is in memory: if the process dies, or the action is interrupted or retried, the run
 * that comes after does not see the input, so it becomes that new message instead (at the next start, or when the
 * action settles for a retry). The platform was told the input was received; it is not lost.
 * @example
 * const handed = new HandedInputs(store, ctx.log, (m) => receive(ctx, m, { autoReply: true }));
 * if (ctx.use('agent:inbox')?.offer(id, { text, onUnread: () => handed.unreadBy(id, m.messageId, m) })) handed.remember(id, m.messageId, m);
 */
export class HandedInputs {
  /** Keys whose new message is on its way (the action ended without reading them). */
  private readonly unread = new Set<string>();
  /** Actions this process handed input to (most settling actions have none: no store lookup for them). */
  private readonly actions = new Set<string>();
  /** New messages on their way (awaited before the store closes, so a queued one is also off the record). */
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly store: ChannelStore,
    private readonly log: Pick<PluginContext['log'], 'warn'>,
    /** Makes a new message of an input (gated `receive`); resolves once the action is queued. */
    private readonly later: (m: InboundMessage) => Promise<unknown>,
  ) {}

  /**
   * The input is in the action's inbox now. A store that refuses the record is reported, not thrown: the input was
   * handed, and handing it again would show it to the model twice.
   */
  remember(actionId: string, messageId: string, message: InboundMessage): void {
    this.actions.add(actionId);
    try {
      this.store.tx(() => this.store.setValue(`${HANDED}${actionId}:${messageId}`, JSON.stringify(message)), 'NORMAL');
    } catch (e) {
      this.log.warn(
        `Input handed to action ${actionId} could not be put on record (${errorMessage(e)}): if Keel stops before the action reads it, it is lost.`,
      );
    }
  }

  /** The action ended without reading the input: it becomes its new message. */
  unreadBy(actionId: string, messageId: string, message: InboundMessage): void {
    const key = `${HANDED}${actionId}:${messageId}`;
    this.unread.add(key);
    this.becomeMessage(key, message);
  }

  /**
   * The action settled. For good (completed, failed, removed): the inputs it read are done with. For a retry: the
   * next run starts afresh and will not see them, so they become new messages.
   */
  settled(actionId: string, status: string): void {
    if (!this.actions.delete(actionId)) return;
    for (const { key, value } of this.store.values(`${HANDED}${actionId}:`)) {
      if (this.unread.has(key)) continue;
      if (status === 'retry') this.becomeMessage(key, value);
      else this.forget(key);
    }
  }

  /** At start: what a previous process handed to actions that never settled becomes new messages. */
  recover(): number {
    const left = this.store.values(HANDED);
    for (const { key, value } of left) this.becomeMessage(key, value);
    return left.length;
  }

  private becomeMessage(key: string, message: InboundMessage | string): void {
    let m: InboundMessage;
    try {
      m = typeof message === 'string' ? (JSON.parse(message) as InboundMessage) : message;
    } catch {
      this.forget(key);
      return;
    }
    const p = this.later(m).then(
      () => this.forget(key),
      (e: unknown) =>
        this.log.warn(
          `Input handed to an action could not become a new message yet (${errorMessage(e)}); it is tried again at the next start.`,
        ),
    );
    this.inFlight.add(p);
    void p.finally(() => this.inFlight.delete(p));
  }

  /** Waits (at most `ms`) for the new messages on their way: call before the store closes. */
  async drain(ms = 5000): Promise<void> {
    if (!this.inFlight.size) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(this.inFlight), new Promise((r) => (timer = setTimeout(r, ms)))]);
    clearTimeout(timer);
  }

  private forget(key: string): void {
    this.unread.delete(key);
    try {
      this.store.deleteValue(key);
    } catch (e) {
      // Left for the next start, which makes a new message of it: a repeat at worst, never a loss.
      this.log.warn(`Could not clear the hand-off record of an input: ${errorMessage(e)}`);
    }
  }
}
