/**
 * chatA (Telegram) on the channel kit: long polling whose offset only moves after the updates are recorded
 * durably, replies rendered once as Telegram HTML and delivered through the ledger under per-chat rate limits,
 * a supervised connection with a stall watchdog and an owner lock, typing feedback stopped on every settle.
 * See docs/telegram.md and docs/channels-kit.md.
 */
import type { Api } from 'grammy';
import {
  errorMessage,
  receive,
  reportIgnored,
  type Action,
  type ChannelCapability,
  type ChannelStatus,
  type OutboundMessage,
  type PluginContext,
  type SendOptions,
  type SentMessage,
} from '../../../sdk/index.js';
import {
  BUILTIN_COMMANDS,
  ChannelStore,
  ConnectionSupervisor,
  DeliveryLedger,
  failureNotice,
  Ingress,
  isBuiltin,
  Outbox,
  OwnerLock,
  ProgressFeedback,
  RATE_POLICIES,
  RateLimiter,
  renderChunks,
  renderTelegram,
  runCommand,
} from '../../../sdk/channel-kit/index.js';
import type manifest from '../manifest.js';

import { ingressKey, toInbound, type TgUpdate } from './inbound.js';
import { ButtonRoutes, routePress } from './buttons.js';
import { registerSkills } from './skills.js';
import { makeTranscriber } from './transcribe.js';
import { classifyTelegram, editText, isBadToken, makeApi, sendChunk, type TgChunk } from './telegram.js';

function get<T>(ctx: PluginContext, key: string, fallback: T): T {
  try {
    const v = ctx.config.get<T>(key);
    return v === undefined || v === null ? fallback : v;
  } catch {
    return fallback;
  }
}

/** The running channel (only once it is configured: its platform library loads with this module). */
export async function startChatA(ctx: PluginContext<typeof manifest>) {
  const token = get<string>(ctx, 'chatAToken', '');
  const apiRoot = ctx.config.get('chatAApiRoot');
  const pollTimeout = ctx.config.get('chatAPollTimeout');
  const menu = get<Array<{ command: string; description: string }>>(ctx, 'chatACommands', BUILTIN_COMMANDS);
  const api: Api = makeApi(token, apiRoot);
  const bot: { username?: string; id?: number } = {};
  const store = ChannelStore.open(ctx.home, 'chatA');
  // Telegram redelivers only what was not acknowledged, within 24 hours: 30 days of dedupe memory is ample.
  store.prune(30 * 24 * 3600 * 1000);
  const buttons = new ButtonRoutes(store);
  buttons.prune(30 * 24 * 3600 * 1000);
  const stopping = new AbortController();
  const outbox = new Outbox({
    ledger: new DeliveryLedger(store),
    limiter: new RateLimiter(RATE_POLICIES.telegram),
    classify: classifyTelegram,
    log: ctx.log,
    signal: stopping.signal,
  });
  const sendOne = (c: TgChunk, _i: number, chatId: string) => sendChunk(api, chatId, c);

  // ---------------------------------------------------------------- outbound
  const send = async (to: string, message: string | OutboundMessage, options: SendOptions = {}): Promise<SentMessage> => {
    if (!/^-?\d+$/.test(to)) throw new Error(`"${to}" is not a numeric Telegram chat id.`);
    const m: OutboundMessage = typeof message === 'string' ? { text: message } : message;
    const reply = options.replyToMessageId && /^\d+$/.test(options.replyToMessageId) ? { replyTo: Number(options.replyToMessageId) } : {};
    const thread = options.threadId && /^\d+$/.test(options.threadId) ? { thread: Number(options.threadId) } : {};
    const text = m.text ?? '';
    const texts: TgChunk[] = (
      options.format === 'plain' ? renderChunks(text, 'plain', { limit: 4096 }).map((plain) => ({ plain })) : renderTelegram(text)
    ).map((c, i) => ({ kind: 'text' as const, ...c, ...(i === 0 ? reply : {}), ...thread, ...(options.silent ? { silent: true } : {}) }));
    if (m.buttons?.length) {
      const last = texts.at(-1);
      if (last?.kind !== 'text') throw new Error('Buttons need a message text to hang on.');
      last.markup = { inline_keyboard: m.buttons } as never;
    }
    const files: TgChunk[] = (m.files ?? []).map((f) => ({
      kind: 'file',
      path: f.path,
      type: f.kind ?? 'document',
      ...(f.caption ? { caption: f.caption } : {}),
      ...thread,
    }));
    const chunks = [...texts, ...files];
    if (!chunks.length) throw new Error('Nothing to send: the message has no text and no files.');
    const out = await ctx.emit('messageOut', { channel: 'chatA', to, text });
    if (out === null) throw new Error('A messageOut hook dropped the message.');
    const ids = await outbox.deliver(options.idempotencyKey ?? DeliveryLedger.freshKey(), to, chunks, sendOne);
    return { messageId: ids[0]!, messageIds: ids };
  };

  const replyCounters = new Map<string, number>();
  const replyTarget = (action: Action) => {
    const r = action.metadata.replyTo ?? {};
    const chatId = r.chatId !== undefined && r.chatId !== null ? String(r.chatId) : '';
    if (!/^-?\d+$/.test(chatId)) throw new Error(`Action ${action.id} has no chatA chat to answer (metadata.replyTo.chatId).`);
    return {
      chatId,
      messageId: r.messageId != null ? String(r.messageId) : undefined,
      threadId: r.threadId != null ? String(r.threadId) : undefined,
    };
  };

  // ---------------------------------------------------------------- progress
  const feedbackOn = () => get<boolean>(ctx, 'progressFeedbackEnabled', true) !== false;
  const typingOnly = () => get<boolean>(ctx, 'progressFeedbackTypingOnly', false) === true;
  const progress = new ProgressFeedback({
    log: ctx.log,
    // Status messages are recorded there: the next start ends the ones a killed process left (recover below).
    store,
    transport: {
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
    },
  });

  ctx.hooks.tap('actionStarted', (action: Action) => {
    if (action.source !== 'chatA' || !feedbackOn()) return;
    try {
      progress.update(action.id, replyTarget(action).chatId, { typingOnly: true });
    } catch {
      // no chat to show it in
    }
  });
  ctx.hooks.tap('actionSettled', async (action: Action, outcome: { status: string; detail?: string }) => {
    if (action.source !== 'chatA') return;
    replyCounters.delete(action.id);
    // Typing stops now (synchronously); the status message is removed once its pending edit is through.
    void progress.stop(action.id);
    // A cancel was asked for and answered already (/cancel, /reset): no failure notice on top.
    if (outcome.status !== 'failed' || /cancel|chat reset/i.test(outcome.detail ?? action.error ?? '')) return;
    try {
      const t = replyTarget(action);
      const sent = await send(t.chatId, failureNotice(outcome.detail ?? action.error), {
        format: 'plain',
        idempotencyKey: `${action.id}:failed`,
        ...(t.messageId ? { replyToMessageId: t.messageId } : {}),
      });
      ctx.emit('messageDelivered', {
        channel: 'chatA',
        actionId: action.id,
        to: t.chatId,
        messageId: sent.messageId,
        messageIds: sent.messageIds,
      });
    } catch (e) {
      ctx.log.warn(`Could not tell chat about the failure of ${action.id}: ${errorMessage(e)}`);
    }
  });

  // ---------------------------------------------------------------- connection
  const supervisor = new ConnectionSupervisor({
    name: 'chatA',
    log: ctx.log,
    stallMs: pollTimeout * 1000 + 5000,
    lock: new OwnerLock(ctx.home, 'chatA', token),
    fatal: (e) =>
      isBadToken(e)
        ? 'Telegram rejected the bot token (getMe answered 401/404). Set a valid chatAToken; the channel stays stopped until then.'
        : undefined,
    connect: async (signal, { live, connected }) => {
      const me = await api.getMe(signal as never);
      bot.username = me.username;
      bot.id = me.id;
      await api.setMyCommands(menu, undefined, signal as never).catch((e) => ctx.log.warn(`setMyCommands failed: ${errorMessage(e)}`));
      connected();
      void outbox.resumeAll(sendOne);
      void progress.recover();
      for (;;) {
        const offset = Number(store.getValue('offset') ?? 0);
        const updates = (await api.getUpdates(
          { offset, timeout: pollTimeout, allowed_updates: ['message', 'callback_query'] },
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
        const fresh = new Set(ingress.record(items, { key: 'offset', value: String(next) }));
        // A redelivery never reaches receive(): say so for the action timelines.
        for (const it of items)
          if (!fresh.has(it)) reportIgnored(ctx, { channel: 'chatA', messageId: it.messageId, chatId: it.chatId }, 'duplicate');
        supervisor.inbound();
      }
    },
  });

  const status = (): ChannelStatus => ({
    enabled: true,
    ...supervisor.status(),
    ...(bot.username ? { botUsername: bot.username } : {}),
    ...(bot.id !== undefined ? { botId: bot.id } : {}),
  });

  // ---------------------------------------------------------------- inbound
  const transcribe = makeTranscriber(ctx);
  const warn = (m: string) => ctx.log.warn(m);
  const ingress: Ingress<TgUpdate> = new Ingress<TgUpdate>(store, {
    log: ctx.log,
    handle: async ({ payload }) => {
      if (payload.callback_query) await api.answerCallbackQuery(payload.callback_query.id).catch(() => undefined);
      let inbound = await toInbound(payload, { api, apiRoot, token, home: ctx.home, bot, signal: stopping.signal, transcribe, warn });
      if (!inbound) return 'skipped';
      if (payload.callback_query) {
        const on = payload.callback_query.message?.message_id;
        const route = routePress(ctx, buttons, inbound, on === undefined ? undefined : String(on), (m) =>
          receive(ctx, m, { autoReply: ctx.config.get('chatAAutoReplyEnabled') }),
        );
        if ('handedTo' in route) return `to-action:${route.handedTo}`;
        inbound = route.inbound;
      }
      if (isBuiltin(inbound.command)) {
        const text = await runCommand(ctx, inbound, menu, () => {
          const s = status();
          return `Telegram: ${s.state}${s.botUsername ? ` as @${s.botUsername}` : ''}.`;
        });
        await send(inbound.chatId, text, {
          idempotencyKey: `cmd:${inbound.messageId}`,
          replyToMessageId: String(inbound.replyTo?.messageId ?? ''),
        });
        return `command:${inbound.command}`;
      }
      const out = await receive(ctx, inbound, { autoReply: ctx.config.get('chatAAutoReplyEnabled') });
      return out.kind === 'ignored' ? `ignored:${out.reason}` : out.kind;
    },
  });

  const capability: ChannelCapability = {
    name: 'chatA',
    status,
    send,
    async reply(action, message) {
      const t = replyTarget(action);
      const n = replyCounters.get(action.id) ?? 0;
      replyCounters.set(action.id, n + 1);
      // The same action's n-th reply has the same key in every run of it: a re-run after a crash sends only what is missing.
      const sent = await send(t.chatId, message, {
        idempotencyKey: `${action.id}:r${n}`,
        ...(t.messageId ? { replyToMessageId: t.messageId } : {}),
        ...(t.threadId ? { threadId: t.threadId } : {}),
      });
      if (typeof message !== 'string' && message.buttons?.length) buttons.remember(t.chatId, sent.messageIds, action.id);
      return sent;
    },
    async progress(action, update) {
      if (!feedbackOn()) return;
      progress.update(action.id, replyTarget(action).chatId, { ...update, typingOnly: update.typingOnly || typingOnly() });
    },
  };
  ctx.provide('channel:chatA', capability);
  registerSkills(ctx, {
    api: () => api,
    send,
    limited: (chatId, fn) => outbox.edit(chatId, fn),
    sentButtons: (chatId, ids, actionId) => buttons.remember(chatId, ids, actionId),
  });

  ingress.recover();
  supervisor.start();
  return {
    async stop() {
      stopping.abort(new Error('stopping'));
      await supervisor.stop();
      await progress.stopAll();
      await ingress.close();
      store.close();
    },
    health: () => {
      const s = status();
      return s.state === 'failed' ? { ok: false, message: s.lastError ?? 'failed' } : { ok: true, message: `chatA ${s.state}` };
    },
  };
}
