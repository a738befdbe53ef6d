/**
 * POST /api/chat, GET /api/chat/:conversationId and the WebSocket action `chat`, offered to the gateway as
 * capability `gateway:routes:gateway-chat`.
 */
import { Type, type GatewayCaller, type GatewayRoutesCapability } from '../../../sdk/index.js';
import type { ChatMessage } from './conversations.js';

/** A conversation id: the REST and WebSocket schemas' pattern, and the channel's address check. */
export const ConversationIdPattern = /^[A-Za-z0-9_-]{1,64}$/;
export const ConversationId = Type.String({
  pattern: ConversationIdPattern.source,
  description: 'Letters, digits, _ and -, at most 64; a new one is made when absent.',
});
const MessageId = Type.String({
  pattern: '^[A-Za-z0-9_.:-]{1,100}$',
  description: 'Your id for this message: sending the same id again is answered as a duplicate and queues nothing.',
});
export const ChatBody = Type.Object(
  {
    text: Type.String({ minLength: 1, maxLength: 20_000 }),
    conversationId: Type.Optional(ConversationId),
    messageId: Type.Optional(MessageId),
  },
  { additionalProperties: false },
);
const Accepted = Type.Object({
  conversationId: Type.String(),
  messageId: Type.String(),
  status: Type.Union([Type.Literal('queued'), Type.Literal('ignored')]),
  actionId: Type.Optional(
    Type.String({ description: 'The queued action: its events (thinking, action, observation, action.*) carry this actionId.' }),
  ),
  reason: Type.Optional(Type.String({ description: 'Why nothing was queued: duplicate, empty, dropped-by-hook, ...' })),
});
const History = Type.Object({
  conversationId: Type.String(),
  messages: Type.Array(
    Type.Object({
      role: Type.Union([Type.Literal('user'), Type.Literal('agent'), Type.Literal('error')]),
      text: Type.String(),
      at: Type.String(),
      messageId: Type.String(),
      actionId: Type.Optional(Type.String()),
    }),
  ),
});
const ErrorBody = Type.Object({ error: Type.String(), message: Type.String() });

export interface ChatInput {
  text: string;
  conversationId?: string;
  messageId?: string;
}
export type ChatOutcome = { conversationId: string; messageId: string; status: 'queued' | 'ignored'; actionId?: string; reason?: string };

export function chatRoutes(o: {
  chat(input: ChatInput, caller: GatewayCaller): Promise<ChatOutcome>;
  history(id: string): ChatMessage[];
}): GatewayRoutesCapability {
  return {
    routes: [
      {
        method: 'POST',
        url: '/api/chat',
        summary: 'Send a chat message to the agent',
        description:
          'Queues the message as an action of channel gateway-chat (202), or says why not (200, status "ignored"). Replies, progress and errors come ' +
          'back on the WebSocket as chat.reply, chat.progress and chat.error events with this conversationId (docs/gateway-chat.md).',
        schema: { body: ChatBody, response: { 202: Accepted, 200: Accepted, 400: ErrorBody, 401: ErrorBody } },
        handler: async ({ body, caller }) => {
          const out = await o.chat(body as ChatInput, caller);
          return { status: out.status === 'queued' ? 202 : 200, body: out };
        },
      },
      {
        method: 'GET',
        url: '/api/chat/:conversationId',
        summary: 'The recent messages of a conversation',
        description: 'At most the last 200 messages of the last 100 conversations since the gateway started (kept in memory).',
        schema: { params: Type.Object({ conversationId: ConversationId }), response: { 200: History, 400: ErrorBody, 401: ErrorBody } },
        handler: ({ params }) => ({ body: { conversationId: params.conversationId!, messages: o.history(params.conversationId!) } }),
      },
    ],
    wsActions: {
      chat: {
        schema: ChatBody,
        description: 'Same as POST /api/chat; the reply result is the same object.',
        handler: (data, caller) => o.chat(data as ChatInput, caller),
      },
    },
  };
}
