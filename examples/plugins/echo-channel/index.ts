/**
 * A user channel plugin written the way the built-in ones are: an adapter that `defineChannel` (keel/sdk/channel-kit)
 * runs. Copy this folder into `$KEEL_HOME/plugins/`. Its "platform" is a small HTTP server on 127.0.0.1:
 *
 *   POST /messages  {"chatId": "room-1", "userId": "alice", "text": "hello"}   -> 202 {"outcome": "queued", "actionId": ...}
 *   GET  /messages?chatId=room-1                                                -> what Keel sent to that chat
 *
 * What the kit does for it, without a line here: every message is recorded durably before the platform is answered
 * (a message posted twice with the same `messageId` is one action, also across a restart), then handled in order per
 * chat; built-in commands (/status, /cancel, /reset, /help...) are answered; every send passes the messageOut taps
 * and the delivery ledger (a reply is sent once even when the action is re-run after a crash) under rate limits; a
 * failed action tells the chat; status, health and the stop order are the kit's. What the adapter says: how a
 * message is sent (`sendChunk`), what a message means (`receive`), how a reply address reads (`target`), and how
 * the platform's errors are classified (`classify`).
 *
 * `/echo <text>` is answered by the plugin itself, through the kit's `send`, without the agent; the built-in
 * commands by the kit (`kit.runtime.handle`).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { errorMessage, receive, type Action, type ReceiveOutcome } from 'keel/sdk';
import { defineChannel, isBuiltin, type ChannelAdapter, type ChannelKit } from 'keel/sdk/channel-kit';
import manifest from './manifest.js';

/** A message as the platform posts it: what the ingress records (JSON). */
interface EchoIn {
  messageId: string;
  chatId: string;
  userId: string;
  text: string;
  mentioned?: boolean;
}

/** One ledgered chunk: a message of the platform. */
type EchoChunk = {
  text: string;
  replyToMessageId?: string;
};

type Sent = EchoChunk & { messageId: string; chatId: string };

const MAX_BODY = 64 * 1024;

function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) reject(new Error('body too large (at most 64 KiB)'));
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

/** The echo adapter. */
function echo(kit: ChannelKit<EchoIn>, autoReply: () => boolean, port: number): ChannelAdapter<EchoIn, EchoChunk> {
  const sent: Sent[] = [];
  let inboundCount = 0;
  let lastInboundAt: string | undefined;
  let listening = '';
  /** HTTP requests waiting for what their message became. */
  const waiting = new Map<string, (o: Record<string, string>) => void>();
  const statusLine = () => `echo: ${kit.status().state}.`;

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/messages') {
      const chatId = url.searchParams.get('chatId');
      return answer(res, 200, { messages: sent.filter((m) => !chatId || m.chatId === chatId) });
    }
    if (req.method !== 'POST' || url.pathname !== '/messages') return answer(res, 404, { error: 'POST or GET /messages' });
    readJson(req)
      .then(async (body) => {
        const { chatId, userId, text } = body;
        if (typeof chatId !== 'string' || typeof userId !== 'string' || typeof text !== 'string' || !chatId || !userId)
          return answer(res, 400, { error: 'chatId, userId and text are required strings' });
        inboundCount++;
        lastInboundAt = new Date().toISOString();
        const messageId = typeof body.messageId === 'string' && body.messageId ? body.messageId : `in-${inboundCount}`;
        if (/^\/echo\b/.test(text)) {
          // Keyed by the message: the same message posted again is not echoed twice.
          const out = await kit.runtime.send(chatId, text.replace(/^\/echo\s*/, ''), {
            replyToMessageId: messageId,
            idempotencyKey: `echo:${messageId}`,
          });
          return answer(res, 200, { outcome: 'echoed', messageId: out.messageId });
        }
        const outcome = new Promise<Record<string, string>>((r) => waiting.set(messageId, r));
        // Recorded durably before the platform hears back; a message recorded before is dropped here.
        const fresh = kit.record([{ messageId, chatId, payload: { messageId, chatId, userId, text, mentioned: body.mentioned === true } }]);
        if (!fresh.length) {
          waiting.delete(messageId);
          return answer(res, 200, { outcome: 'ignored', reason: 'duplicate' });
        }
        const o = await outcome;
        return answer(res, o.outcome === 'queued' ? 202 : 200, o);
      })
      .catch((e: unknown) => answer(res, 400, { error: errorMessage(e) }));
  });

  return {
    // Sending: the kit renders nothing here (the platform shows text as it is), one chunk is one message.
    policy: { send: { capacity: 5, perSecond: 5 }, edit: { capacity: 5, perSecond: 5 }, global: { capacity: 30, perSecond: 30 } },
    // Nothing this platform refuses gets better by trying again.
    classify: () => ({ retry: false }),
    badAddress: (to) => (to.trim() ? undefined : 'an echo chat id is a non-empty string'),
    chunks: (m, options) => [{ text: m.text ?? '', ...(options.replyToMessageId ? { replyToMessageId: options.replyToMessageId } : {}) }],
    sendChunk: async (c, _i, chatId) => {
      const messageId = `echo-${sent.length + 1}`;
      sent.push({ messageId, chatId, ...c });
      return messageId;
    },
    target: (action: Action) => {
      const r = action.metadata.replyTo ?? {};
      if (typeof r.chatId !== 'string') throw new Error(`action ${action.id} has no echo chat to answer`);
      return { chatId: r.chatId, options: typeof r.messageId === 'string' ? { replyToMessageId: r.messageId } : {} };
    },
    // No typing indicator, no status messages on this platform.
    typing: false,
    statusMessages: false,
    transport: () => ({
      typing: async () => undefined,
      status: async () => {
        throw new Error('the echo platform shows no progress');
      },
    }),

    // A recorded message: the SDK's receive (admin check, untrusted marking, session, messageIn, gating).
    async receive({ payload: m }, turn) {
      const command = /^\/(\w+)/.exec(m.text)?.[1];
      const inbound = {
        channel: 'echo',
        messageId: m.messageId,
        chatId: m.chatId,
        userId: m.userId,
        text: m.text,
        mentioned: m.mentioned === true,
        ...(command ? { command } : {}),
      };
      const told = (o: Record<string, string>) => {
        waiting.get(m.messageId)?.(o);
        waiting.delete(m.messageId);
      };
      // A built-in command (/status, /cancel, /reset, /help, ...) is answered by the kit on this chat.
      if (isBuiltin(command)) {
        const outcome = await kit.runtime.handle(inbound, { statusLine, turn });
        told({ outcome });
        return outcome;
      }
      const o: ReceiveOutcome = await receive(kit.ctx, inbound, { autoReply: autoReply(), onOrdered: turn.ordered });
      told(
        o.kind === 'queued'
          ? { outcome: 'queued', actionId: o.action.id }
          : o.kind === 'ignored'
            ? { outcome: 'ignored', reason: o.reason }
            : { outcome: o.kind },
      );
      return o.kind === 'ignored' ? `ignored:${o.reason}` : o.kind;
    },

    status: () => ({ ...(lastInboundAt ? { lastInboundAt } : {}) }),
    // Where it listens, on the capability (for a script, or the tests).
    expose: {
      get url() {
        return listening;
      },
    },

    // No connection to supervise: the listener opens at start and closes at stop.
    async start() {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => resolve());
      });
      const address = server.address() as AddressInfo;
      listening = `http://127.0.0.1:${address.port}`;
      kit.ctx.log.info(`echo channel listening on ${listening}`);
    },
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

export default defineChannel<typeof manifest, EchoIn, EchoChunk>({
  manifest,
  name: 'echo',
  adapter: (kit, ctx) => echo(kit, () => ctx.config.get('echoChannelAutoReply'), ctx.config.get('echoChannelPort')),
});
