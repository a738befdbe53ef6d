/**
 * Gateway chat plugin: a channel (`channel:gateway-chat`) whose inbound messages arrive over the gateway (REST and
 * WebSocket, through `receive`) and whose replies, progress and errors go out as events on the gateway's
 * WebSocket stream (`gateway:events`). See docs/gateway-chat.md.
 */
import { errorsFor } from '../../sdk/errors.js';
import { randomUUID } from 'node:crypto';
import {
  definePlugin,
  outgoing,
  receive,
  type Action,
  type ChannelCapability,
  type GatewayCaller,
  type OutboundMessage,
  type SentMessage,
  gatewayServesHere,
} from '../../sdk/index.js';
import manifest from './manifest.js';
import { Conversations } from './src/conversations.js';
import { chatRoutes, type ChatInput, type ChatOutcome } from './src/routes.js';

const coded = errorsFor('gateway-chat');

const CHANNEL = 'gateway-chat';
/** Idempotency keys and replied actions remembered (bounded). */
const REMEMBERED = 10_000;

function textOf(m: string | OutboundMessage): { text: string; files: Array<{ name: string; caption?: string }> } {
  if (typeof m === 'string') return { text: m, files: [] };
  const files = (m.files ?? []).map((f) => ({ name: f.path.split('/').pop() ?? f.path, ...(f.caption ? { caption: f.caption } : {}) }));
  return { text: m.text ?? '', files };
}

/** A set that forgets its oldest entries past `limit`. */
function boundedSet(limit: number) {
  const s = new Set<string>();
  return {
    has: (k: string) => s.has(k),
    add(k: string) {
      s.add(k);
      if (s.size > limit) s.delete(s.values().next().value!);
    },
  };
}

export default definePlugin({
  manifest,
  setup(ctx) {
    // Replies travel on the gateway's WebSocket of this process: without a gateway serving here (`keel run` alone,
    // or the gateway in another process) the channel would accept messages it can never answer, so it stays off.
    if (!gatewayServesHere(ctx)) return {};
    const conversations = new Conversations();
    const delivered = boundedSet(REMEMBERED);
    const replied = boundedSet(REMEMBERED);
    const events = () => ctx.use('gateway:events');
    const emit = (event: string, data: Record<string, unknown>) => events()?.emit(event, data);
    const conversationOf = (a: Action): string | undefined => {
      const to = (a.metadata.replyTo as { chatId?: unknown } | undefined)?.chatId;
      return typeof to === 'string' ? to : undefined;
    };

    const send = async (
      to: string,
      message: string | OutboundMessage,
      options: { idempotencyKey?: string; actionId?: string } = {},
    ): Promise<SentMessage> => {
      const messageId = `gc_${randomUUID()}`;
      if (options.idempotencyKey && delivered.has(options.idempotencyKey)) return { messageId, messageIds: [] };
      // messageOut taps see (and may rewrite or drop) the text before it reaches the conversation.
      const { text, files } = textOf(await outgoing(ctx, CHANNEL, to, message));
      if (options.idempotencyKey) delivered.add(options.idempotencyKey);
      conversations.add(to, {
        role: 'agent',
        text,
        at: new Date().toISOString(),
        messageId,
        ...(options.actionId ? { actionId: options.actionId } : {}),
      });
      emit('chat.reply', {
        conversationId: to,
        messageId,
        text,
        ...(files.length ? { files } : {}),
        ...(options.actionId ? { actionId: options.actionId } : {}),
      });
      return { messageId, messageIds: [messageId] };
    };

    const channel: ChannelCapability = {
      name: CHANNEL,
      status: () => {
        const serving = events() !== undefined;
        return {
          enabled: true,
          connected: serving,
          state: serving ? 'connected' : 'stopped',
          ...(serving ? {} : { lastError: 'the gateway is not serving in this process' }),
        };
      },
      send: (to, message, options) => send(to, message, options?.idempotencyKey ? { idempotencyKey: options.idempotencyKey } : {}),
      async reply(action, message) {
        const to = conversationOf(action);
        if (!to)
          throw coded(
            'KEEL_E_CHANNEL_SEND_FAILED',
            `action ${action.id} has no gateway chat conversation to answer (metadata.replyTo.chatId).`,
          );
        replied.add(action.id);
        return send(to, message, { actionId: action.id });
      },
      async progress(action, update) {
        const to = conversationOf(action);
        if (!to) return;
        emit('chat.progress', {
          conversationId: to,
          actionId: action.id,
          typingOnly: update.typingOnly,
          ...(update.thought !== undefined && !update.typingOnly ? { thought: update.thought.slice(0, 500) } : {}),
          ...(update.step !== undefined ? { step: update.step } : {}),
        });
      },
    };
    ctx.provide(`channel:${CHANNEL}`, channel);

    // An action that settles without having answered (an agent that does not call reply, or a failure) still
    // answers its conversation once: the result, or a short error without internals.
    ctx.hooks.tap('actionSettled', async (a: Action, o: { status: string; detail?: string }) => {
      if (a.source !== CHANNEL || replied.has(a.id)) return;
      const to = conversationOf(a);
      if (!to) return;
      if (o.status === 'completed') {
        replied.add(a.id);
        await send(to, o.detail ?? a.result ?? '', { actionId: a.id, idempotencyKey: `${a.id}:final` });
      } else if (o.status === 'failed' || o.status === 'removed') {
        replied.add(a.id);
        const message =
          o.status === 'failed'
            ? 'Sorry, this failed: ' +
              String(o.detail ?? a.error ?? 'unknown error')
                .split('\n')[0]!
                .slice(0, 300)
            : 'This message was cancelled.';
        conversations.add(to, {
          role: 'error',
          text: message,
          at: new Date().toISOString(),
          messageId: `gc_${randomUUID()}`,
          actionId: a.id,
        });
        emit('chat.error', { conversationId: to, actionId: a.id, message });
      }
    });

    const chat = async (input: ChatInput, caller: GatewayCaller): Promise<ChatOutcome> => {
      const conversationId = input.conversationId ?? `c_${randomUUID().slice(0, 12)}`;
      const messageId = input.messageId ?? `m_${randomUUID()}`;
      const userId = caller.operator ? 'operator' : 'remote';
      const out = await receive(
        ctx,
        { channel: CHANNEL, messageId, chatId: conversationId, userId, text: input.text },
        { autoReply: true, operator: caller.operator },
      );
      if (out.kind === 'ignored') return { conversationId, messageId, status: 'ignored', reason: out.reason };
      const actionId = out.kind === 'queued' ? out.action.id : out.actionId;
      conversations.add(conversationId, { role: 'user', text: input.text, at: new Date().toISOString(), messageId, actionId });
      emit('chat.message', { conversationId, messageId, actionId, text: input.text });
      return { conversationId, messageId, status: 'queued', actionId };
    };
    ctx.provide('gateway:routes:gateway-chat', chatRoutes({ chat, history: (id) => conversations.get(id) }));
    return {};
  },
});
