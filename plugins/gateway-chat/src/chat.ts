/**
 * The gateway chat's adapter, run by the kit's `defineChannel`: no connection (the channel is up while the plugin
 * runs), inbound messages recorded by the kit's ingress (`kit.record`) and turned into actions by `receive`, and
 * every answer delivered through the kit's runtime (ledger keys `<actionId>:r<n>`, the failure notice) one chunk at
 * a time to the conversation: a `chat.reply` or `chat.error` event on the gateway's WebSocket and the stored
 * conversation. See docs/gateway-chat.md.
 */
import { randomUUID } from 'node:crypto';
import type { ChannelAdapter, ChannelKit } from '../../../sdk/channel-kit/index.js';
import { errorCodeOf, errorsFor } from '../../../sdk/errors.js';
import { type Action, errorMessage, type GatewayCaller, type PluginContext, type ReceiveOutcome, receive } from '../../../sdk/index.js';
import type manifest from '../manifest.js';
import { Conversations } from './conversations.js';
import { ConversationIdPattern, type ChatInput, type ChatOutcome, chatRoutes } from './routes.js';

const coded = errorsFor('gateway-chat');

const CHANNEL = 'gateway-chat';
/** Replied actions remembered (bounded). */
const REMEMBERED = 10_000;

/** What the ingress keeps of a message sent to the chat (its id and conversation are the item's). */
export interface ChatPayload {
  text: string;
  userId: 'operator' | 'remote';
  operator: boolean;
}

/**
 * One answer as the ledger keeps it: a chat.reply (text and file names), or a chat.error (`error`), of an action
 * when the ledger key is one of an action's (`<actionId>:r<n>`, `:failed`, `:final`, `:removed`).
 */
export type ChatChunk = {
  text: string;
  files?: Array<{ name: string; caption?: string }>;
  actionId?: string;
  error?: true;
};

/** The action a ledger key belongs to, and whether it is the action's error (its failure or its removal). */
function actionOfKey(key: string): { actionId: string; error: boolean } | undefined {
  const m = /^([^:]+):(r\d+|final|failed|removed)$/.exec(key);
  return m ? { actionId: m[1]!, error: m[2] === 'failed' || m[2] === 'removed' } : undefined;
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

/** Local delivery has no platform limits: the buckets only keep a runaway loop from flooding the clients. */
const LOCAL = {
  send: { capacity: 100, perSecond: 100 },
  edit: { capacity: 100, perSecond: 100 },
  global: { capacity: 1000, perSecond: 1000 },
};

export function gatewayChat(kit: ChannelKit<ChatPayload>, ctx: PluginContext<typeof manifest>): ChannelAdapter<ChatPayload, ChatChunk> {
  const conversations = new Conversations();
  const replied = boundedSet(REMEMBERED);
  const events = () => ctx.use('gateway:events');
  const conversationOf = (a: Action): string | undefined => {
    const to = (a.metadata.replyTo as { chatId?: unknown } | undefined)?.chatId;
    return typeof to === 'string' ? to : undefined;
  };
  /** The REST or WebSocket caller waiting for what became of its message (until its first handling). */
  const waiting = new Map<string, (o: ReceiveOutcome | Error) => void>();

  const chat = async (input: ChatInput, caller: GatewayCaller): Promise<ChatOutcome> => {
    const conversationId = input.conversationId ?? `c_${randomUUID().slice(0, 12)}`;
    const messageId = input.messageId ?? `m_${randomUUID()}`;
    const payload: ChatPayload = { text: input.text, userId: caller.operator ? 'operator' : 'remote', operator: caller.operator };
    // The same id sent twice at once: the second is the ingress's duplicate, and the first waits for its answer.
    const answer = waiting.has(messageId) ? undefined : new Promise<ReceiveOutcome | Error>((resolve) => waiting.set(messageId, resolve));
    let fresh: boolean;
    try {
      fresh = await kit.recordSoon({ messageId, chatId: conversationId, payload });
    } catch (e) {
      if (answer) waiting.delete(messageId);
      throw e;
    }
    if (!fresh || !answer) {
      if (answer) waiting.delete(messageId);
      return { conversationId, messageId, status: 'ignored', reason: 'duplicate' };
    }
    const out = await answer;
    if (out instanceof Error) throw out;
    if (out.kind === 'ignored') return { conversationId, messageId, status: 'ignored', reason: out.reason };
    return { conversationId, messageId, status: 'queued', actionId: out.kind === 'queued' ? out.action.id : out.actionId };
  };

  return {
    policy: LOCAL,
    // The gateway away (restarting) is worth waiting for; anything else would fail the same way again.
    classify: (e) => (errorCodeOf(e) === 'KEEL_E_CHANNEL_NOT_CONNECTED' ? { retry: true } : { retry: false }),
    badAddress: (to) =>
      ConversationIdPattern.test(to) ? undefined : `"${to}" is not a gateway chat conversation id (letters, digits, _ and -, at most 64).`,
    // One message is one chunk: clients get one chat.reply per answer, as before.
    chunks: (m, _options, key) => {
      const of = actionOfKey(key);
      const files = (m.files ?? []).map((f) => ({ name: f.path.split('/').pop() ?? f.path, ...(f.caption ? { caption: f.caption } : {}) }));
      return [
        {
          text: m.text ?? '',
          ...(files.length ? { files } : {}),
          ...(of ? { actionId: of.actionId } : {}),
          ...(of?.error ? { error: true as const } : {}),
        },
      ];
    },
    sendChunk: async (c, _index, to) => {
      const gateway = events();
      if (!gateway) throw coded('KEEL_E_CHANNEL_NOT_CONNECTED', 'The gateway is not serving in this process.');
      const messageId = `gc_${randomUUID()}`;
      const at = new Date().toISOString();
      const actionId = c.actionId ? { actionId: c.actionId } : {};
      if (c.error) {
        conversations.add(to, { role: 'error', text: c.text, at, messageId, ...actionId });
        gateway.emit('chat.error', { conversationId: to, ...actionId, message: c.text });
      } else {
        conversations.add(to, { role: 'agent', text: c.text, at, messageId, ...actionId });
        gateway.emit('chat.reply', { conversationId: to, messageId, text: c.text, ...(c.files ? { files: c.files } : {}), ...actionId });
      }
      return messageId;
    },
    target: (action) => {
      const to = conversationOf(action);
      if (!to)
        throw coded(
          'KEEL_E_CHANNEL_SEND_FAILED',
          `action ${action.id} has no gateway chat conversation to answer (metadata.replyTo.chatId).`,
        );
      return { chatId: to, options: {} };
    },
    // Progress is the chat.progress event (below), not typing or a status message.
    typing: false,
    transport: () => ({ typing: async () => undefined, status: async () => '' }),
    failureLead: 'Sorry, this failed',

    status: () => {
      const serving = events() !== undefined;
      return {
        connected: serving,
        state: serving ? 'connected' : 'stopped',
        ...(serving ? {} : { lastError: 'the gateway is not serving in this process' }),
      };
    },

    receive: async ({ messageId, chatId, payload }, turn) => {
      const tell = waiting.get(messageId);
      waiting.delete(messageId);
      let out: ReceiveOutcome;
      try {
        out = await receive(
          ctx,
          { channel: CHANNEL, messageId, chatId, userId: payload.userId, text: payload.text },
          { autoReply: true, operator: payload.operator, onOrdered: turn.ordered },
        );
      } catch (e) {
        // The caller hears of the failure; the ingress tries the message again.
        tell?.(e instanceof Error ? e : new Error(String(e)));
        throw e;
      }
      if (out.kind !== 'ignored') {
        const actionId = out.kind === 'queued' ? out.action.id : out.actionId;
        conversations.add(chatId, { role: 'user', text: payload.text, at: new Date().toISOString(), messageId, actionId });
        events()?.emit('chat.message', { conversationId: chatId, messageId, actionId, text: payload.text });
      }
      tell?.(out);
      return out.kind === 'ignored' ? `ignored:${out.reason}` : out.kind;
    },

    async reply(action, message) {
      replied.add(action.id);
      return kit.runtime.reply(action, message);
    },

    async progress(action, update) {
      const to = conversationOf(action);
      if (!to) return;
      events()?.emit('chat.progress', {
        conversationId: to,
        actionId: action.id,
        typingOnly: update.typingOnly,
        ...(update.thought !== undefined && !update.typingOnly ? { thought: update.thought.slice(0, 500) } : {}),
        ...(update.step !== undefined ? { step: update.step } : {}),
      });
    },

    start() {
      // An action that settles without having answered (an agent that does not call reply) still answers its
      // conversation once, with its result; a removed one says so. A failure is the kit's notice.
      ctx.hooks.tap('actionSettled', async (a: Action, o: { status: string; detail?: string }) => {
        if (a.source !== CHANNEL || replied.has(a.id)) return;
        const to = conversationOf(a);
        if (!to || (o.status !== 'completed' && o.status !== 'removed')) return;
        replied.add(a.id);
        const [text, key] =
          o.status === 'completed' ? [o.detail ?? a.result ?? '', `${a.id}:final`] : ['This message was cancelled.', `${a.id}:removed`];
        try {
          await kit.runtime.send(to, text, { idempotencyKey: key, ...(o.status === 'removed' ? { format: 'plain' as const } : {}) });
        } catch (e) {
          ctx.log.warn(`Could not answer gateway chat ${to} for ${a.id}: ${errorMessage(e)}`);
        }
      });
      ctx.provide('gateway:routes:gateway-chat', chatRoutes({ chat, history: (id) => conversations.get(id) }));
    },
  };
}
