/**
 * The built-in commands every chat channel's menu shares (status, queue, cancel, reset, models, help): answered by
 * the channel itself, not by the agent, the same way on every platform (Telegram's menu, Slack's slash commands).
 * Who may use them: help, status, models, queue and cancel (own actions): anyone who can write to the bot;
 * cancel of others' actions and reset: admins only (adminUsers.<channel>, through kernel:policy; fail closed).
 */
import type { InboundMessage } from '../channel.js';
import type { PluginContext } from '../plugin.js';
import type { Action } from '../types.js';

/**
 * The menu: command (without '/') and a one-line description.
 * @example api.setMyCommands(BUILTIN_COMMANDS)
 */
export const BUILTIN_COMMANDS = [
  { command: 'status', description: 'Agent and queue status' },
  { command: 'queue', description: 'Your pending actions' },
  { command: 'cancel', description: 'Cancel your newest running or pending action' },
  { command: 'reset', description: 'Cancel all of this chat’s actions (admins)' },
  { command: 'models', description: 'Provider and model in use' },
  { command: 'help', description: 'What I can do' },
];
const BUILTIN = new Set(BUILTIN_COMMANDS.map((c) => c.command));

/**
 * Whether a command is one of the built-ins (answered by `runCommand`, not the agent).
 * @example if (isBuiltin(inbound.command)) await send(chat, await runCommand(ctx, inbound, BUILTIN_COMMANDS, status));
 */
export function isBuiltin(command: string | undefined): command is string {
  return !!command && BUILTIN.has(command);
}

function isAdmin(ctx: PluginContext, channel: string, userId: string): boolean {
  try {
    return ctx.use('kernel:policy')?.isAdmin({ kind: 'user', channel, userId }) === true;
  } catch {
    return false;
  }
}

function get<T>(ctx: PluginContext, key: string): T | undefined {
  try {
    return ctx.config.get<T>(key);
  } catch {
    return undefined;
  }
}

/** Actions that came from this chat and are not settled, newest first. */
function chatActions(ctx: PluginContext, channel: string, chatId: string): Action[] {
  return ctx.queue
    .list()
    .pending.filter((a) => a.source === channel && String(a.metadata.replyTo?.chatId ?? '') === chatId)
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
}
const ownerOf = (a: Action) => String((a.metadata.inbound as { userId?: unknown } | undefined)?.userId ?? '');

/**
 * The answer (Markdown) to a built-in command of `m` (its channel, chat and user decide what it sees and may do).
 * @example const text = await runCommand(ctx, inbound, BUILTIN_COMMANDS, () => 'Slack: connected.');
 */
export async function runCommand(
  ctx: PluginContext,
  m: InboundMessage,
  menu: Array<{ command: string; description: string }>,
  status: () => string,
): Promise<string> {
  const admin = isAdmin(ctx, m.channel, m.userId);
  switch (m.command) {
    case 'help':
      return ['Send me a message and I will work on it. Commands:', ...menu.map((c) => `/${c.command} \u2014 ${c.description}`)].join('\n');
    case 'status': {
      const c = ctx.queue.counts();
      return `${status()}\nQueue: ${c.pending} pending, ${c.completed} completed, ${c.failed} failed.`;
    }
    case 'models':
      return `Provider: \`${get<string>(ctx, 'llmProvider') ?? 'default'}\`, model: \`${get<string>(ctx, 'modelName') ?? 'default'}\`.`;
    case 'queue': {
      const mine = chatActions(ctx, m.channel, m.chatId).filter((a) => admin || ownerOf(a) === m.userId);
      if (!mine.length) return 'Nothing pending from this chat.';
      return mine.map((a) => `\u2022 \`${a.id}\` ${a.status}: ${a.task.replace(/\s+/g, ' ').slice(0, 60)}`).join('\n');
    }
    case 'cancel': {
      const target = chatActions(ctx, m.channel, m.chatId).find(
        (a) =>
          (admin || ownerOf(a) === m.userId) &&
          a.metadata.inbound &&
          (a.metadata.inbound as { messageId?: unknown }).messageId !== m.messageId,
      );
      if (!target) return 'Nothing of yours to cancel in this chat.';
      const r = await ctx.queue.cancel(target.id, `cancelled from ${m.channel} by ${m.userId}`);
      return r === 'removed' || r === 'stopping' ? `Cancelled \`${target.id}\`.` : `Could not cancel \`${target.id}\` (${r}).`;
    }
    case 'reset': {
      if (!admin) return 'Only an admin may reset this chat.';
      const all = chatActions(ctx, m.channel, m.chatId);
      for (const a of all) await ctx.queue.cancel(a.id, `chat reset from ${m.channel} by ${m.userId}`);
      return `Reset: ${all.length} action(s) of this chat cancelled.`;
    }
    default:
      return 'Unknown command.';
  }
}
