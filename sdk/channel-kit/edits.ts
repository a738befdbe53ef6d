/**
 * Edits and deletions of inbound messages (docs/channels.md, "Edits and deletions"). The message as it reads now is
 * what counts: an edit of a message whose action still waits amends that action in place; an edit while it runs is
 * handed to the action (the model reads it before its next step); an edit of a message already answered, or of one
 * that was ignored (an edit adding the bot's mention), is a new message, gated as any. A deleted message takes its
 * waiting or running action with it. An edit more than EDIT_WINDOW_MS after the message was written changes nothing.
 */
import { decideAdmin, type InboundMessage, reportIgnored, taskOf } from '../channel.js';
import type { PluginContext, QueueApi } from '../plugin.js';
import type { Action } from '../types.js';
import type { HandedInputs } from './handed.js';

/** How long after a message was written an edit of it still counts. */
export const EDIT_WINDOW_MS = 15 * 60_000;

/**
 * The dedupe key of one edit: the message's id and the platform's edit time (each version is handled once, however
 * often the platform delivers it).
 * @example editKey('1234', '2026-11-26T10:00:00.000Z') // '1234:edit:2026-11-26T10:00:00.000Z'
 */
export function editKey(messageId: string, editedAt: string): string {
  return `${messageId}:edit:${editedAt}`;
}

/** The message id an action was made of: its own, or the one its edit was of. */
function messageOf(a: Action): { channel?: unknown; messageId?: unknown } {
  const inb = (a.metadata.inbound ?? {}) as { channel?: unknown; messageId?: unknown };
  const edit = a.metadata.edit as { of?: unknown } | undefined;
  return edit && typeof edit.of === 'string' ? { channel: inb.channel, messageId: edit.of } : inb;
}

/**
 * The newest action made of a platform message (the message itself, or an edit of it), waiting, running or kept in
 * the queue's history; undefined when none is.
 * @example const a = latestActionOf(ctx.queue, 'chatC', '1300000000000000001');
 */
export function latestActionOf(queue: Pick<QueueApi, 'list'>, channel: string, messageId: string): Action | undefined {
  const { pending, completed, failed } = queue.list();
  let latest: Action | undefined;
  for (const a of [...pending, ...completed, ...failed]) {
    const m = messageOf(a);
    if (m.channel !== channel || m.messageId !== messageId) continue;
    if (!latest || a.createdAt > latest.createdAt || (a.createdAt === latest.createdAt && a.id > latest.id)) latest = a;
  }
  return latest;
}

/** One edit of an inbound message, as a channel hands it to the runtime's `edited`. */
export interface EditedMessage {
  /** The message as it reads now; `messageId` is the message's own id (as its first delivery had it). */
  inbound: InboundMessage;
  /** The platform's time of this edit (ISO, or its own timestamp): with the id, what makes each edit distinct. */
  editedAt: string;
  /** When the message was first written (epoch ms), when the platform says: the edit window counts from it. */
  sentAt?: number;
}

/** How `routeEdit` makes its changes (the runtime's paths). */
export interface EditPaths {
  /** Makes a new message of the edit (built-in commands, then gated `receive`); returns that path's outcome. */
  deliver(m: InboundMessage): Promise<string>;
  /**
   * Amends the waiting action to the edited message (gated `receiveInto`): `amended`, `started` (it no longer
   * waits; nothing changed), or the reason the edited message would be ignored (nothing changed).
   */
  amend(actionId: string, m: InboundMessage): Promise<{ kind: 'amended' } | { kind: 'started' } | { kind: 'ignored'; reason: string }>;
}

/**
 * Routes one edit; returns the outcome the ingress records.
 * @example await routeEdit(ctx, handed, { inbound, editedAt }, { deliver: (m) => rt.handle(m, h), amend });
 */
export async function routeEdit(
  ctx: Pick<PluginContext, 'queue' | 'use' | 'emit'>,
  handed: HandedInputs,
  e: EditedMessage,
  paths: EditPaths,
  now = Date.now(),
): Promise<string> {
  const { deliver } = paths;
  const { inbound } = e;
  const original = inbound.messageId;
  // Reported under the message's own id: `keel trace <message id>` says why its edit changed nothing.
  const ignored = (reason: 'edit-too-old' | 'edit-unchanged') => {
    reportIgnored(ctx, { channel: inbound.channel, messageId: original, chatId: inbound.chatId, userId: inbound.userId }, reason);
    return `ignored:${reason}`;
  };
  if (e.sentAt !== undefined && Number.isFinite(e.sentAt) && now - e.sentAt > EDIT_WINDOW_MS) return ignored('edit-too-old');
  const text = inbound.text.trim();
  const latest = latestActionOf(ctx.queue, inbound.channel, original);
  // Compared as the task it would become (text and attachment lines), as the action has it.
  if (latest && latest.task.trim() === taskOf(inbound)) return ignored('edit-unchanged');
  const asNew = (edit: { after?: string }): InboundMessage => ({
    ...inbound,
    messageId: editKey(original, e.editedAt),
    replyTo: { messageId: original, ...(inbound.replyTo ?? {}) },
    edit: { of: original, at: e.editedAt, ...edit },
  });
  // A command is a command, whatever it was before: answered (or queued) as a new message.
  if (!latest || inbound.command) return deliver(asNew({}));

  if (latest.status === 'pending') {
    // Not started: the action becomes the edited message in place (its place in line kept). Gated as a message:
    // an edit that would be ignored (the bot's mention dropped with auto-reply off) withdraws the request.
    const out = await paths.amend(latest.id, asNew({}));
    if (out.kind === 'amended') return `amended:${latest.id}`;
    if (out.kind === 'ignored') {
      const r = await ctx.queue.cancel(latest.id, 'cancelled: its message was edited into one that is not a request');
      return `withdrawn:${latest.id} ${r} ignored:${out.reason}`;
    }
    // It started meanwhile: as a running one.
  }
  if (latest.status === 'executing' || latest.status === 'pending') {
    const inbox = ctx.use('agent:inbox');
    const linked = asNew({ after: latest.id });
    if (inbox?.running(latest.id)) {
      const who = inbound.userName ? `${inbound.userName} (${inbound.userId})` : `user ${inbound.userId}`;
      const took = inbox.offer(latest.id, {
        text: `[${who} edited the message this task came from; it now reads:]\n${text}`,
        untrusted:
          inbound.forceUntrusted === true ||
          inbound.notAdmin === true ||
          !decideAdmin(ctx, { kind: 'user', channel: inbound.channel, userId: inbound.userId }),
        from: `${inbound.channel}:${inbound.userId}`,
        onUnread: () => handed.unreadBy(latest.id, linked.messageId, linked),
      });
      if (took) {
        // On record before the ingress calls the edit handled: a crash before the model reads it makes it a new message.
        handed.remember(latest.id, linked.messageId, linked);
        return `to-action:${latest.id}`;
      }
    }
    return deliver(linked);
  }
  // Answered (or failed): the edited message is asked again, the model told it edits one it answered.
  return deliver(asNew({ after: latest.id }));
}

/**
 * A deleted message: its action is cancelled when it still waits or runs (here; one running in another process is
 * left alone). Returns the outcome the ingress records.
 * @example await routeDelete(ctx, 'chatC', '1300000000000000001');
 */
export async function routeDelete(ctx: Pick<PluginContext, 'queue'>, channel: string, messageId: string): Promise<string> {
  const latest = latestActionOf(ctx.queue, channel, messageId);
  if (!latest) return 'ignored:unknown';
  if (latest.status !== 'pending' && latest.status !== 'executing') return 'ignored:answered';
  const r = await ctx.queue.cancel(latest.id, 'cancelled: its message was deleted');
  return `cancelled:${latest.id} ${r}`;
}
