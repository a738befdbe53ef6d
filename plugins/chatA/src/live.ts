/**
 * chatA (Telegram): the adapter `defineChannel` runs. Long polling whose offset only moves after the updates are
 * recorded durably (`kit.record` with the offset as its cursor), replies rendered once as Telegram HTML, the
 * platform's error classification and its buttons. The kit owns the rest (ledger, rate limits, supervision, lock,
 * ingress, status). See docs/telegram.md and docs/channels.md.
 */
import { errorsFor } from '../../../sdk/errors.js';
import type { Api } from 'grammy';
import { errorMessage, parseApprovalButton, type Action, type PluginContext } from '../../../sdk/index.js';
import {
  BUILTIN_COMMANDS,
  type ChannelAdapter,
  type ChannelKit,
  connectionLock,
  RATE_POLICIES,
  renderChunks,
  renderTelegram,
  setting,
  makeTranscriber,
} from '../../../sdk/channel-kit/index.js';
import type manifest from '../manifest.js';

import { editedAt, ingressKey, messageKey, toInbound, type TgUpdate } from './inbound.js';
import { ButtonRoutes, routePress } from './buttons.js';
import { approvalTap } from './approval-tap.js';
import { registerSkills } from './skills.js';
import { classifyTelegram, editText, isBadToken, makeApi, sendChunk, type TgChunk } from './telegram.js';

const coded = errorsFor('chatA');

/** The Telegram adapter (only once the channel is configured: its platform library loads with this module). */
export function telegram(kit: ChannelKit<TgUpdate>, ctx: PluginContext<typeof manifest>): ChannelAdapter<TgUpdate, TgChunk> {
  const token = setting(ctx, 'chatAToken', '');
  const apiRoot = ctx.config.get('chatAApiRoot');
  const pollTimeout = ctx.config.get('chatAPollTimeout');
  const menu = setting<Array<{ command: string; description: string }>>(ctx, 'chatACommands', BUILTIN_COMMANDS);
  const api: Api = makeApi(token, apiRoot);
  const bot: { username?: string; id?: number } = {};
  const replyTarget = (action: Action) => {
    const r = action.metadata.replyTo ?? {};
    const chatId = r.chatId !== undefined && r.chatId !== null ? String(r.chatId) : '';
    if (!/^-?\d+$/.test(chatId))
      throw coded('KEEL_E_CHANNEL_SEND_FAILED', `Action ${action.id} has no chatA chat to answer (metadata.replyTo.chatId).`);
    return {
      chatId,
      options: {
        ...(r.messageId != null ? { replyToMessageId: String(r.messageId) } : {}),
        ...(r.threadId != null ? { threadId: String(r.threadId) } : {}),
      },
    };
  };
  const buttons = new ButtonRoutes(kit.store);
  buttons.prune(30 * 24 * 3600 * 1000);
  const transcribe = makeTranscriber(ctx);
  const warn = (m: string) => ctx.log.warn(m);
  const limited = <T>(chatId: string, fn: () => Promise<T>) => kit.runtime.outbox.edit(chatId, fn);
  const statusLine = () => {
    const s = kit.status();
    return `Telegram: ${s.state}${s.botUsername ? ` as @${s.botUsername}` : ''}.`;
  };

  return {
    // Telegram redelivers only what was not acknowledged, within 24 hours: 30 days of dedupe memory is ample.
    // One lock for the connection and the sends: a Redis lease fences each send by its token (lease.ts).
    lock: connectionLock(ctx, 'chatA', token),
    policy: RATE_POLICIES.telegram,
    classify: classifyTelegram,
    sendChunk: (c, _i, chatId) => sendChunk(api, chatId, c),
    badAddress: (to) => (/^-?\d+$/.test(to) ? undefined : `"${to}" is not a numeric Telegram chat id.`),
    chunks: (m, options) => {
      const reply = options.replyToMessageId && /^\d+$/.test(options.replyToMessageId) ? { replyTo: Number(options.replyToMessageId) } : {};
      const thread = options.threadId && /^\d+$/.test(options.threadId) ? { thread: Number(options.threadId) } : {};
      const text = m.text ?? '';
      const texts: TgChunk[] = (
        options.format === 'plain' ? renderChunks(text, 'plain', { limit: 4096 }).map((plain) => ({ plain })) : renderTelegram(text)
      ).map((c, i) => ({ kind: 'text' as const, ...c, ...(i === 0 ? reply : {}), ...thread, ...(options.silent ? { silent: true } : {}) }));
      if (m.buttons?.length) {
        const last = texts.at(-1);
        if (last?.kind !== 'text') throw coded('KEEL_E_INVALID_ARGUMENT', 'Buttons need a message text to hang on.');
        last.markup = { inline_keyboard: m.buttons } as never;
      }
      const files = (m.files ?? []).map(
        (f): TgChunk => ({
          kind: 'file',
          path: f.path,
          type: f.kind ?? 'document',
          ...(f.caption ? { caption: f.caption } : {}),
          ...thread,
        }),
      );
      return [...texts, ...files];
    },
    target: replyTarget,
    transport: (outbox) => ({
      typing: async (chatId) => void (await api.sendChatAction(chatId, 'typing')),
      status: async (chatId, text, id) => {
        const [c] = renderTelegram(text);
        if (id) {
          await outbox.edit(chatId, () => editText(api, chatId, Number(id), c!.html, c!.plain));
          return id;
        }
        return outbox.edit(chatId, () => sendChunk(api, chatId, { kind: 'text', ...c!, silent: true }));
      },
      // Rejects when Telegram refuses (e.g. older than 48 h): the kit then edits it to a last line.
      finish: async (chatId, id) => void (await api.deleteMessage(chatId, Number(id))),
    }),

    connection: {
      stallMs: pollTimeout * 1000 + 5000,
      fatal: (e) =>
        isBadToken(e)
          ? 'Telegram rejected the bot token (getMe answered 401/404). Set a valid chatAToken; the channel stays stopped until then.'
          : undefined,
      connect: async (signal, { live, connected }) => {
        const me = await api.getMe(signal as never);
        bot.username = me.username;
        bot.id = me.id;
        await api.setMyCommands(menu, undefined, signal as never).catch((e) => ctx.log.warn(`setMyCommands failed: ${errorMessage(e)}`));
        connected(`as @${me.username} (Telegram bot ${me.id})`);
        for (;;) {
          const offset = Number(kit.store.getValue('offset') ?? 0);
          const updates = (await api.getUpdates(
            { offset, timeout: pollTimeout, allowed_updates: ['message', 'edited_message', 'callback_query'] },
            signal as never,
          )) as unknown as TgUpdate[];
          live();
          if (!updates.length) continue;
          const next = Math.max(...updates.map((u) => u.update_id)) + 1;
          const items = updates.flatMap((u) => {
            const k = ingressKey(u);
            return k ? [{ ...k, payload: u }] : [];
          });
          // Recorded (with the offset) before the next getUpdates tells Telegram they arrived.
          kit.record(items, { key: 'offset', value: String(next) });
        }
      },
    },

    status: () => ({
      ...(bot.username ? { botUsername: bot.username } : {}),
      ...(bot.id !== undefined ? { botId: bot.id } : {}),
    }),

    receive: async ({ payload }, turn) => {
      const rt = kit.runtime;
      const tap = parseApprovalButton(payload.callback_query?.data);
      if (payload.callback_query && tap) return approvalTap(ctx, api, limited, payload.callback_query, tap);
      if (payload.callback_query) await api.answerCallbackQuery(payload.callback_query.id).catch(() => undefined);
      let inbound = await toInbound(payload, { api, apiRoot, token, home: ctx.home, bot, signal: rt.signal, transcribe, warn });
      if (!inbound) return 'skipped';
      if (payload.callback_query) {
        const on = payload.callback_query.message?.message_id;
        const route = routePress(ctx, buttons, rt.handed, inbound, on === undefined ? undefined : String(on));
        if ('handedTo' in route) return `to-action:${route.handedTo}`;
        inbound = route.inbound;
      }
      const options = { turn, menu, statusLine };
      const edit = payload.edited_message;
      // An edit names the message it edits by that message's own ingress id; the kit finds its action from it.
      if (edit)
        return rt.edited(
          {
            inbound: { ...inbound, messageId: messageKey(edit) },
            editedAt: editedAt(edit),
            ...(typeof edit.date === 'number' ? { sentAt: edit.date * 1000 } : {}),
          },
          options,
        );
      return rt.handle(inbound, options);
    },

    async reply(action, message) {
      const sent = await kit.runtime.reply(action, message);
      if (typeof message !== 'string' && message.buttons?.length) buttons.remember(replyTarget(action).chatId, sent.messageIds, action.id);
      return sent;
    },

    start() {
      registerSkills(ctx, {
        api: () => api,
        send: kit.runtime.send,
        limited,
        sentButtons: (chatId, ids, actionId) => buttons.remember(chatId, ids, actionId),
      });
    },
  };
}
