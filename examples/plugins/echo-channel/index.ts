/**
 * A user channel plugin written against the public SDK only (`keel/sdk`): copy this folder into
 * `$KEEL_HOME/plugins/`. Its "platform" is a small HTTP server on 127.0.0.1:
 *
 *   POST /messages  {"chatId": "room-1", "userId": "alice", "text": "hello"}   -> 202 {"outcome": "queued", ...}
 *   GET  /messages?chatId=room-1                                                -> what Keel sent to that chat
 *
 * Every message goes through the SDK's `receive` (admin check, untrusted marking, session, messageIn, gating) and
 * becomes an action; the agent answers through this plugin's `reply`. `/echo <text>` is answered by the plugin
 * itself through `send`, without the agent.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  definePlugin,
  errorMessage,
  outgoing,
  receive,
  type Action,
  type ChannelCapability,
  type ChannelStatus,
  type OutboundMessage,
  type SentMessage,
} from 'keel/sdk';
import manifest from './manifest.js';

interface Outgoing {
  messageId: string;
  chatId: string;
  text: string;
  replyToMessageId?: string;
}

const MAX_BODY = 64 * 1024;

function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) reject(new Error('body too large'));
      else chunks.push(c);
    });
    req.on('end', () => {
      try {
        const v = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
        if (v && typeof v === 'object' && !Array.isArray(v)) resolve(v as Record<string, unknown>);
        else reject(new Error('body must be a JSON object'));
      } catch {
        reject(new Error('body must be JSON'));
      }
    });
    req.on('error', reject);
  });
}

function answer(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const textOf = (m: string | OutboundMessage) => (typeof m === 'string' ? m : (m.text ?? ''));

export default definePlugin({
  manifest,
  async setup(ctx) {
    const outbox: Outgoing[] = [];
    let inboundCount = 0;
    let lastInboundAt: string | undefined;
    let sent = 0;

    const deliver = async (chatId: string, message: string | OutboundMessage, replyToMessageId?: string): Promise<SentMessage> => {
      // Every outbound message passes the messageOut taps first (they may redact it, or drop it: then this throws).
      const m = await outgoing(ctx, 'echo', chatId, message);
      const messageId = `echo-${++sent}`;
      outbox.push({ messageId, chatId, text: textOf(m), ...(replyToMessageId ? { replyToMessageId } : {}) });
      return { messageId, messageIds: [messageId] };
    };

    const server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (req.method === 'GET' && url.pathname === '/messages') {
        const chatId = url.searchParams.get('chatId');
        return answer(res, 200, { messages: outbox.filter((m) => !chatId || m.chatId === chatId) });
      }
      if (req.method !== 'POST' || url.pathname !== '/messages') return answer(res, 404, { error: 'POST or GET /messages' });
      readJson(req)
        .then(async (body) => {
          const { chatId, userId, text } = body;
          if (typeof chatId !== 'string' || typeof userId !== 'string' || typeof text !== 'string' || !chatId || !userId) {
            return answer(res, 400, { error: 'chatId, userId and text are required strings' });
          }
          inboundCount++;
          lastInboundAt = new Date().toISOString();
          const messageId = typeof body.messageId === 'string' && body.messageId ? body.messageId : `in-${inboundCount}`;
          const command = /^\/(\w+)/.exec(text)?.[1];
          if (command === 'echo') {
            const sentMessage = await deliver(chatId, text.replace(/^\/echo\s*/, ''), messageId);
            return answer(res, 200, { outcome: 'echoed', messageId: sentMessage.messageId });
          }
          const outcome = await receive(
            ctx,
            { channel: 'echo', messageId, chatId, userId, text, ...(command ? { command } : {}), mentioned: body.mentioned === true },
            { autoReply: ctx.config.get('echoChannelAutoReply') },
          );
          if (outcome.kind === 'queued') return answer(res, 202, { outcome: 'queued', actionId: outcome.action.id });
          return answer(res, 200, outcome.kind === 'ignored' ? { outcome: 'ignored', reason: outcome.reason } : { outcome: outcome.kind });
        })
        .catch((e: unknown) => answer(res, 400, { error: errorMessage(e) }));
    });
    const port = ctx.config.get('echoChannelPort');
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    const address = server.address() as AddressInfo;
    ctx.log.info(`echo channel listening on http://127.0.0.1:${address.port}`);

    const channel: ChannelCapability & { url: string } = {
      name: 'echo',
      url: `http://127.0.0.1:${address.port}`,
      status: (): ChannelStatus => ({
        enabled: true,
        connected: server.listening,
        state: server.listening ? 'connected' : 'stopped',
        ...(lastInboundAt ? { lastInboundAt } : {}),
      }),
      send: async (to, message, options) => deliver(to, message, options?.replyToMessageId),
      reply: async (action: Action, message) => {
        const replyTo = action.metadata.replyTo ?? {};
        if (typeof replyTo.chatId !== 'string') throw new Error(`action ${action.id} has no echo chat to answer`);
        return deliver(replyTo.chatId, message, typeof replyTo.messageId === 'string' ? replyTo.messageId : undefined);
      },
    };
    ctx.provide('channel:echo', channel);
    return {
      stop: () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    };
  },
});
