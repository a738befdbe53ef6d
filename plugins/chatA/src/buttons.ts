/**
 * Which action sent which inline keyboard, so a press can reach that action (docs/telegram.md, "Buttons").
 * Kept in the channel's durable store (`btn:<chatId>:<messageId>` → action id and when), so the link survives a
 * restart: a press on an old keyboard of a finished action still names it in the new message.
 */
import type { ChannelStore } from '../../../sdk/channel-kit/index.js';
import { errorMessage, type InboundMessage, type PluginContext } from '../../../sdk/index.js';

const PREFIX = 'btn:';

export class ButtonRoutes {
  constructor(private readonly store: ChannelStore) {}

  /** The messages just sent with buttons belong to this action. */
  remember(chatId: string, messageIds: string[], actionId: string, now = Date.now()): void {
    const value = JSON.stringify({ action: actionId, at: now });
    this.store.tx(() => {
      for (const id of messageIds) this.store.setValue(`${PREFIX}${chatId}:${id}`, value);
    }, 'NORMAL');
  }

  /** The action whose message carried the pressed button, if one is known. */
  actionOf(chatId: string, messageId: string): string | undefined {
    const raw = this.store.getValue(`${PREFIX}${chatId}:${messageId}`);
    if (!raw) return undefined;
    try {
      const v = JSON.parse(raw) as { action?: unknown };
      return typeof v.action === 'string' ? v.action : undefined;
    } catch {
      return undefined;
    }
  }

  /** Forgets links older than `maxAgeMs` (as the store forgets its dedupe memory). */
  prune(maxAgeMs: number, now = Date.now()): void {
    const old = this.store.values(PREFIX).filter(({ value }) => {
      try {
        const at = Number((JSON.parse(value) as { at?: unknown }).at);
        return !Number.isFinite(at) || now - at > maxAgeMs;
      } catch {
        return true;
      }
    });
    if (old.length) this.store.tx(() => old.forEach(({ key }) => this.store.deleteValue(key)), 'NORMAL');
  }
}

/** What became of a press: handed to its running action, or the inbound message to receive (linked when known). */
export type PressRoute = { handedTo: string } | { inbound: InboundMessage };

const HANDED = 'handed:';

/**
 * Presses handed to a running action, kept in the channel's durable store (`handed:<action id>:<message id>` → the
 * new message the press becomes if that action never gets to use it) from the hand-off until the action has settled
 * for good. The action's inbox is in memory: if the process dies, or the action is interrupted or retried, the run
 * that comes after does not see the press, so the press becomes that new message instead (at the next start, or when
 * the action settles for a retry). Telegram was told the press was received; it is not lost.
 */
export class HandedPresses {
  /** Keys whose new message is on its way (the action ended without reading them). */
  private readonly unread = new Set<string>();
  /** Actions this process handed presses to (most settling actions have none: no store lookup for them). */
  private readonly actions = new Set<string>();
  /** New messages on their way (awaited before the store closes, so a queued one is also off the record). */
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly store: ChannelStore,
    private readonly log: Pick<PluginContext['log'], 'warn'>,
    /** Makes a new message of a press (gated `receive`); resolves once the action is queued. */
    private readonly later: (m: InboundMessage) => Promise<unknown>,
  ) {}

  /**
   * The press is in the action's inbox now. A store that refuses the record is reported, not thrown: the press was
   * handed, and handing it again would show it to the model twice.
   */
  remember(actionId: string, messageId: string, message: InboundMessage): void {
    this.actions.add(actionId);
    try {
      this.store.tx(() => this.store.setValue(`${HANDED}${actionId}:${messageId}`, JSON.stringify(message)), 'NORMAL');
    } catch (e) {
      this.log.warn(
        `A button press handed to action ${actionId} could not be put on record (${errorMessage(e)}): if Keel stops before the action reads it, it is lost.`,
      );
    }
  }

  /** The action ended without reading the press: it becomes its new message. */
  unreadBy(actionId: string, messageId: string, message: InboundMessage): void {
    const key = `${HANDED}${actionId}:${messageId}`;
    this.unread.add(key);
    this.becomeMessage(key, message);
  }

  /**
   * The action settled. For good (completed, failed, removed): the presses it read are done with. For a retry: the
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
        this.log.warn(`A button press could not become a new message yet (${errorMessage(e)}); it is tried again at the next start.`),
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
      this.log.warn(`Could not clear the hand-off record of a button press: ${errorMessage(e)}`);
    }
  }
}

/**
 * Routes a button press (`inbound` as built from the callback query, `pressedOn` the Telegram message id the
 * keyboard hangs on). The action that sent the keyboard gets the press when it is still running here (through
 * `agent:inbox`, recorded in `handed`); otherwise the press becomes a new message that names that action
 * (`replyTo.inResponseTo`).
 */
export function routePress(
  ctx: Pick<PluginContext, 'use' | 'log'>,
  routes: ButtonRoutes,
  handed: HandedPresses,
  inbound: InboundMessage,
  pressedOn: string | undefined,
): PressRoute {
  const actionId = pressedOn ? routes.actionOf(inbound.chatId, pressedOn) : undefined;
  if (!actionId) return { inbound };
  const linked: InboundMessage = {
    ...inbound,
    text: `${inbound.text}\n[on a message sent by action ${actionId}, which is no longer running]`,
    replyTo: { ...(inbound.replyTo ?? {}), inResponseTo: actionId },
  };
  const took = ctx.use('agent:inbox')?.offer(actionId, {
    text: `${inbound.text} (by ${inbound.userName ? `@${inbound.userName}` : `user ${inbound.userId}`} on message ${pressedOn})`,
    untrusted: !isAdmin(ctx, inbound.userId),
    from: `chatA:${inbound.userId}`,
    onUnread: () => handed.unreadBy(actionId, inbound.messageId, linked),
  });
  if (!took) return { inbound: linked };
  // On record before the ingress calls the press handled (the same file, an earlier commit).
  handed.remember(actionId, inbound.messageId, linked);
  return { handedTo: actionId };
}

/** The kernel's admin decision for the presser; without the policy, or when it fails, nobody is (fail closed). */
function isAdmin(ctx: Pick<PluginContext, 'use'>, userId: string): boolean {
  try {
    return ctx.use('kernel:policy')?.isAdmin({ kind: 'user', channel: 'chatA', userId }) === true;
  } catch {
    return false;
  }
}
