/**
 * The built-in commands of the bot menu: answered by the channel itself, not by the agent.
 * Who may use them: help, status, models, queue and cancel (own actions): anyone who can write to the bot;
 * cancel of others' actions and reset: admins only (adminUsers.chatA, through kernel:policy; fail closed).
 */
import type { Action, InboundMessage, PluginContext } from '../../../sdk/index.js';

export const BUILTIN_COMMANDS = [
  { command: 'status', description: 'Agent and queue status' },
  { command: 'queue', description: 'Your pending actions' },
  { command: 'cancel', description: 'Cancel your newest running or pending action' },
  { command: 'reset', description: 'Cancel all of this chat’s actions (admins)' },
  { command: 'models', description: 'Provider and model in use' },
  { command: 'help', description: 'What I can do' },
];
const BUILTIN = new Set(BUILTIN_COMMANDS.map((c) => c.command));

export function isBuiltin(command: string | undefined): command is string {
  return !!command && BUILTIN.has(command);
}

function isAdmin(ctx: PluginContext, userId: string): boolean {
  try {
    return ctx.use('kernel:policy')?.isAdmin({ kind: 'user', channel: 'chatA', userId }) === true;
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
function chatActions(ctx: PluginContext, chatId: string): Action[] {
  return ctx.queue
    .list()
    .pending.filter((a) => a.source === 'chatA' && String(a.metadata.replyTo?.chatId ?? '') === chatId)
    .sort((a, b) => b.createdAt.localeCompare(a.createdAt));
}
const ownerOf = (a: Action) => String((a.metadata.inbound as { userId?: unknown } | undefined)?.userId ?? '');

/** The answer (Markdown) to a built-in command. */
export async function runCommand(
  ctx: PluginContext,
  m: InboundMessage,
  menu: Array<{ command: string; description: string }>,
  status: () => string,
): Promise<string> {
  const admin = isAdmin(ctx, m.userId);
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
      const mine = chatActions(ctx, m.chatId).filter((a) => admin || ownerOf(a) === m.userId);
      if (!mine.length) return 'Nothing pending from this chat.';
      return mine.map((a) => `\u2022 \`${a.id}\` ${a.status}: ${a.task.replace(/\s+/g, ' ').slice(0, 60)}`).join('\n');
    }
    case 'cancel': {
      const target = chatActions(ctx, m.chatId).find(
        (a) =>
          (admin || ownerOf(a) === m.userId) &&
          a.metadata.inbound &&
          (a.metadata.inbound as { messageId?: unknown }).messageId !== m.messageId,
      );
      if (!target) return 'Nothing of yours to cancel in this chat.';
      const r = await ctx.queue.cancel(target.id, `cancelled from chatA by ${m.userId}`);
      return r === 'removed' || r === 'stopping' ? `Cancelled \`${target.id}\`.` : `Could not cancel \`${target.id}\` (${r}).`;
    }
    case 'reset': {
      if (!admin) return 'Only an admin may reset this chat.';
      const all = chatActions(ctx, m.chatId);
      for (const a of all) await ctx.queue.cancel(a.id, `chat reset from chatA by ${m.userId}`);
      return `Reset: ${all.length} action(s) of this chat cancelled.`;
    }
    default:
      return 'Unknown command.';
  }
}
