/**
 * chatD (Slack) on the channel kit: Bolt with a Socket Mode receiver that acknowledges an envelope only after it
 * is in the durable ingress, replies rendered once as mrkdwn and delivered through the ledger under per-channel
 * rate limits (threaded when the message came in a thread), a supervised connection with a silence watchdog and
 * an owner lock, the kit's command menu, a progress status message edited in place.
 * See docs/slack.md and docs/channels-kit.md.
 */
import { createHash } from 'node:crypto';
import { App } from '@slack/bolt';
import type { WebClient } from '@slack/web-api';
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
  runCommand,
} from '../../../sdk/channel-kit/index.js';
import {
  errorMessage,
  receive,
  type Action,
  type ChannelCapability,
  type ChannelStatus,
  type OutboundMessage,
  type PluginContext,
  type SendOptions,
  type SentMessage,
} from '../../../sdk/index.js';
import type manifest from '../manifest.js';
import { withSlackFiles } from './files.js';
import { itemOf, toInbound, type SlackItem } from './inbound.js';
import {
  badCredentials,
  classifySlack,
  CONVERSATION_ID,
  reactionName,
  sendChunk,
  slackErrorCode,
  slackEscape,
  type SlackChunk,
} from './slack.js';
import { runSocket, SupervisedReceiver } from './socket.js';

function get<T>(ctx: PluginContext, key: string, fallback: T): T {
  try {
    const v = ctx.config.get<T>(key);
    return v === undefined || v === null ? fallback : v;
  } catch {
    return fallback;
  }
}

/** Progress feedback is keyed by where it shows: a channel, or a thread in it. */
const where = (channel: string, thread?: string) => (thread ? `${channel}|${thread}` : channel);
const split = (key: string) => {
  const [channel, thread] = key.split('|') as [string, string | undefined];
  return { channel, thread };
};

/** The running channel (only once it is configured: its platform library loads with this module). */
export async function startChatD(ctx: PluginContext<typeof manifest>) {
  const botToken = get<string>(ctx, 'chatDBotToken', '');
  const appToken = get<string>(ctx, 'chatDAppToken', '');
  const apiUrl = get(ctx, 'chatDApiUrl', 'https://slack.com/api/');
  const slackApiUrl = apiUrl.endsWith('/') ? apiUrl : `${apiUrl}/`;
  const bot: { userId?: string | undefined; name?: string | undefined; team?: string | undefined } = {};
  const store = ChannelStore.open(ctx.home, 'chatD');
  const stopping = new AbortController();
  const outbox = new Outbox({
    ledger: new DeliveryLedger(store),
    limiter: new RateLimiter(RATE_POLICIES.slack),
    classify: classifySlack,
    log: ctx.log,
    signal: stopping.signal,
  });

  // ---------------------------------------------------------------- connection
  const supervisor = new ConnectionSupervisor({
    name: 'chatD',
    log: ctx.log,
    stallMs: get(ctx, 'chatDSocketTimeout', 30) * 1000,
    lock: new OwnerLock(ctx.home, 'chatD', appToken),
    fatal: (e) => badCredentials(e, (e as { chatDToken?: 'bot' | 'app' }).chatDToken ?? 'app'),
    connect: async (signal, { live, connected }) => {
      try {
        const me = await client.auth.test();
        bot.userId = me.user_id;
        bot.name = me.user;
        bot.team = me.team;
      } catch (e) {
        throw Object.assign(e as object, { chatDToken: 'bot' });
      }
      return runSocket(
        {
          appToken,
          apiUrl: slackApiUrl,
          log: ctx.log,
          hello: (h) => {
            if ((h.num_connections ?? 1) > 1) {
              ctx.log.warn(
                `chatD: Slack reports ${h.num_connections} open Socket Mode connections for this app. Another Keel, or another program using this ` +
                  'app-level token, is connected too: Slack hands each event to only one connection, so this Keel would receive about half the ' +
                  'messages. Stop the other instance or give it its own Slack app.',
              );
            }
          },
          record: async (e) => {
            const item = itemOf(e, bot.userId);
            if (!item) return;
            // A burst shares one transaction; the ack waits until this item is in it.
            await ingress.recordSoon(item);
            supervisor.inbound();
          },
        },
        signal,
        {
          live,
          connected: () => {
            connected();
            void outbox.resumeAll(sendOne);
            void progress.recover();
          },
        },
      );
    },
  });

  const app = new App({
    token: botToken,
    receiver: new SupervisedReceiver(supervisor),
    // auth.test runs in the supervised connect (so a bad token fails once, clearly), not in Bolt's constructor.
    tokenVerificationEnabled: false,
    logger: {
      debug: () => undefined,
      info: () => undefined,
      warn: (...m) => ctx.log.debug(`bolt: ${m.join(' ')}`),
      error: (...m) => ctx.log.debug(`bolt: ${m.join(' ')}`),
      setLevel: () => undefined,
      getLevel: () => 'info' as never,
      setName: () => undefined,
    },
    // The kit's limiter honours Retry-After and retries; the client itself neither waits nor retries.
    clientOptions: { slackApiUrl, retryConfig: { retries: 0 }, rejectRateLimitedCalls: true },
  });
  const client: WebClient = app.client;
  const sendOne = (c: SlackChunk, _i: number, channel: string) => sendChunk(client, channel, c);

  // ---------------------------------------------------------------- outbound
  const send = async (to: string, message: string | OutboundMessage, options: SendOptions = {}): Promise<SentMessage> => {
    if (!CONVERSATION_ID.test(to))
      throw new Error(`"${to}" is not a Slack conversation id (C... channel, G... private channel, D... direct message).`);
    const m: OutboundMessage = typeof message === 'string' ? { text: message } : message;
    const thread = options.threadId ?? options.replyToMessageId;
    const at = thread ? { thread } : {};
    const text = m.text ?? '';
    const texts: SlackChunk[] = (
      options.format === 'plain' ? renderChunks(text, 'plain', { limit: 2800 }).map(slackEscape) : renderChunks(text, 'slack')
    ).map((t) => ({
      kind: 'text' as const,
      text: t,
      ...at,
    }));
    const files: SlackChunk[] = (m.files ?? []).map((f) => ({
      kind: 'file',
      path: f.path,
      ...(f.caption ? { comment: f.caption } : {}),
      ...at,
    }));
    const chunks = [...texts, ...files];
    if (!chunks.length) throw new Error('Nothing to send: the message has no text and no files.');
    const out = await ctx.emit('messageOut', { channel: 'chatD', to, text });
    if (out === null) throw new Error('A messageOut hook dropped the message.');
    const ids = await outbox.deliver(options.idempotencyKey ?? DeliveryLedger.freshKey(), to, chunks, sendOne);
    return { messageId: ids[0]!, messageIds: ids };
  };

  const replyCounters = new Map<string, number>();
  const replyTarget = (action: Action) => {
    const r = action.metadata.replyTo ?? {};
    const channel = r.chatId != null ? String(r.chatId) : '';
    if (!CONVERSATION_ID.test(channel))
      throw new Error(`Action ${action.id} has no Slack conversation to answer (metadata.replyTo.chatId).`);
    const thread = r.threadTs ?? r.threadId;
    return {
      channel,
      messageId: r.messageId != null ? String(r.messageId) : undefined,
      thread: thread != null ? String(thread) : undefined,
    };
  };

  // ---------------------------------------------------------------- progress
  // Slack has no typing indicator for bots over Socket Mode: feedback is the status message, edited in place.
  const feedbackOn = () => get<boolean>(ctx, 'progressFeedbackEnabled', true) !== false;
  const typingOnly = () => get<boolean>(ctx, 'progressFeedbackTypingOnly', false) === true;
  const progress = new ProgressFeedback({
    log: ctx.log,
    // Status messages are recorded there: the next start ends the ones a killed process left (recover below).
    store,
    transport: {
      typing: async () => undefined,
      status: async (key, text, id) => {
        const { channel, thread } = split(key);
        const [t] = renderChunks(text, 'slack');
        if (id) {
          await outbox.edit(channel, () => client.chat.update({ channel, ts: id, text: t! }));
          return id;
        }
        return outbox.edit(channel, () => sendChunk(client, channel, { kind: 'text', text: t!, ...(thread ? { thread } : {}) }));
      },
      finish: async (key, id) => void (await client.chat.delete({ channel: split(key).channel, ts: id })),
    },
  });
  ctx.hooks.tap('actionSettled', async (action: Action, outcome: { status: string; detail?: string }) => {
    if (action.source !== 'chatD') return;
    replyCounters.delete(action.id);
    await progress.stop(action.id);
    if (outcome.status !== 'failed') return;
    try {
      const t = replyTarget(action);
      await send(t.channel, failureNotice(outcome.detail ?? action.error), {
        format: 'plain',
        idempotencyKey: `${action.id}:failed`,
        ...(t.thread ? { threadId: t.thread } : {}),
      });
    } catch (e) {
      ctx.log.warn(`Could not tell Slack about the failure of ${action.id}: ${errorMessage(e)}`);
    }
  });

  const status = (): ChannelStatus => ({ enabled: true, ...supervisor.status(), ...(bot.name ? { botUsername: bot.name } : {}) });

  // ---------------------------------------------------------------- inbound
  const ingress: Ingress<SlackItem> = new Ingress<SlackItem>(store, {
    log: ctx.log,
    handle: async (item) => {
      const p = item.payload;
      const autoReply = get<boolean>(ctx, 'chatDAutoReplyEnabled', false) === true;
      const plain = toInbound(item, bot.userId);
      // Files of a message the gating will ignore are not fetched (a busy channel would fill the disk).
      const files = p.kind === 'message' && (autoReply || plain.mentioned || plain.command) ? p.event.files : undefined;
      const inbound = await withSlackFiles(plain, files, {
        home: ctx.home,
        botToken,
        apiUrl: slackApiUrl,
        log: ctx.log,
        signal: stopping.signal,
      });
      if (isBuiltin(inbound.command)) {
        const text = await runCommand(ctx, inbound, BUILTIN_COMMANDS, () => {
          const s = status();
          return `Slack: ${s.state}${s.botUsername ? ` as @${s.botUsername}` : ''}${bot.team ? ` in ${bot.team}` : ''}.`;
        });
        await send(inbound.chatId, text, {
          idempotencyKey: `cmd:${item.messageId}`,
          ...(inbound.threadId ? { threadId: inbound.threadId } : {}),
        });
        return `command:${inbound.command}`;
      }
      const out = await receive(ctx, inbound, { autoReply });
      return out.kind === 'ignored' ? `ignored:${out.reason}` : out.kind;
    },
  });

  const capability: ChannelCapability = {
    name: 'chatD',
    status,
    send,
    async reply(action, message) {
      const t = replyTarget(action);
      const n = replyCounters.get(action.id) ?? 0;
      replyCounters.set(action.id, n + 1);
      // The same action's n-th reply has the same key in every run of it: a re-run after a crash sends only what is missing.
      return send(t.channel, message, { idempotencyKey: `${action.id}:r${n}`, ...(t.thread ? { threadId: t.thread } : {}) });
    },
    async progress(action, update) {
      if (!feedbackOn() || typingOnly() || update.typingOnly) return;
      const t = replyTarget(action);
      progress.update(action.id, where(t.channel, t.thread), update);
    },
    async react(chatId, messageId, emoji) {
      if (!CONVERSATION_ID.test(chatId)) throw new Error(`"${chatId}" is not a Slack conversation id (C..., G... or D...).`);
      const name = reactionName(emoji);
      if (!name) return { native: false };
      try {
        await outbox.edit(chatId, () => client.reactions.add({ channel: chatId, timestamp: messageId, name }));
      } catch (e) {
        if (slackErrorCode(e) !== 'already_reacted') throw e;
      }
      return { native: true, reaction: name };
    },
  };
  ctx.provide('channel:chatD', capability);
  ctx.skills.register('send_chatD', async (args, call) => {
    // A name instead of an id ("the user", "here") means the conversation of the current message.
    let to = args.channel_id.trim();
    if (!CONVERSATION_ID.test(to) && call.action?.source === 'chatD' && !/^[CGD][A-Za-z0-9]*$/.test(to))
      to = replyTarget(call.action).channel;
    if (!CONVERSATION_ID.test(to))
      throw new Error(
        `channel_id "${args.channel_id}" is not a Slack conversation id: it starts with C (channel), G (private channel) or D (direct message), then capitals and digits.`,
      );
    // The same call in the same action (a re-run after a crash) is delivered once.
    const key = call.action
      ? {
          idempotencyKey: `${call.action.id}:send_chatD:${createHash('sha256')
            .update(JSON.stringify([to, args.message]))
            .digest('hex')
            .slice(0, 16)}`,
        }
      : {};
    const sent = await send(to, args.message, key);
    return { channel: 'chatD', channel_id: to, ts: sent.messageId, messageIds: sent.messageIds };
  });

  ingress.recover();
  await app.start();
  return {
    async stop() {
      stopping.abort(new Error('stopping'));
      await app.stop();
      await progress.stopAll();
      await ingress.close();
      store.close();
    },
    health: () => {
      const s = status();
      return s.state === 'failed' ? { ok: false, message: s.lastError ?? 'failed' } : { ok: true, message: `chatD ${s.state}` };
    },
  };
}
