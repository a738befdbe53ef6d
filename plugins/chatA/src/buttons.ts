/**
 * Which action sent which inline keyboard, so a press can reach that action (docs/telegram.md, "Buttons").
 * Kept in the channel's durable store (`btn:<chatId>:<messageId>` → action id and when), so the link survives a
 * restart: a press on an old keyboard of a finished action still names it in the new message.
 */
import type { ChannelStore, HandedInputs } from '../../../sdk/channel-kit/index.js';
import type { InboundMessage, PluginContext } from '../../../sdk/index.js';

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

/**
 * Routes a button press (`inbound` as built from the callback query, `pressedOn` the Telegram message id the
 * keyboard hangs on). The action that sent the keyboard gets the press when it is still running here (through
 * `agent:inbox`, recorded in `handed`); otherwise the press becomes a new message that names that action
 * (`replyTo.inResponseTo`).
 */
export function routePress(
  ctx: Pick<PluginContext, 'use' | 'log'>,
  routes: ButtonRoutes,
  handed: HandedInputs,
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
