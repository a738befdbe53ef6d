/**
 * chatD (Slack): the adapter `defineChannel` runs. Socket Mode under the kit's supervised connection, each envelope
 * acknowledged only after it is in the durable ingress (`kit.recordSoon`), replies rendered once as mrkdwn and delivered through the ledger under per-channel
 * rate limits (threaded when the message came in a thread), a supervised connection with a silence watchdog and
 * an owner lock, a catch-up from the conversation history after every connection and periodically (which also
 * rebuilds a connection that stopped delivering events), the kit's command menu, a progress status message edited
 * in place. The kit owns the rest (ledger, rate limits, supervision, lock, ingress, status).
 * See docs/slack.md and docs/channels-kit.md.
 */
import { errorsFor } from '../../../sdk/errors.js';
import { App } from '@slack/bolt';
import type { WebClient } from '@slack/web-api';
import {
  type ChannelAdapter,
  type ChannelKit,
  EDIT_WINDOW_MS,
  type IngressItem,
  connectionLock,
  RATE_POLICIES,
  renderChunks,
  setting,
  skillSendKey,
  ThreadFollow,
} from '../../../sdk/channel-kit/index.js';
import type { Action, ChannelStatus, PluginContext } from '../../../sdk/index.js';
import type manifest from '../manifest.js';
import { CatchUp, cursorKey, newerTs, threadKey } from './catchup.js';
import { withSlackFiles } from './files.js';
import { itemOf, mentions, messageItemOf, messageKey, toInbound, type SlackItem, type SlackMessageEvent } from './inbound.js';
import {
  badCredentials,
  blocksOf,
  classifySlack,
  CONVERSATION_ID,
  reactionName,
  sendChunk,
  slackErrorCode,
  slackEscape,
  type SlackChunk,
} from './slack.js';
import { mentionedIds, SlackNames } from './names.js';
import { quoteOf, ThreadStarts } from './quoted.js';
import { runSocket, SupervisedReceiver } from './socket.js';
import { approvalTap } from './approval-tap.js';

const coded = errorsFor('chatD');

/** chatD's status: the kit's, the bot's name, and the history catch-up (`caughtUp` always there). */
export interface ChatDStatus extends ChannelStatus {
  caughtUp: number;
}

/** Progress feedback is keyed by where it shows: a channel, or a thread in it. */
const where = (channel: string, thread?: string) => (thread ? `${channel}|${thread}` : channel);
const split = (key: string) => {
  const [channel, thread] = key.split('|') as [string, string | undefined];
  return { channel, thread };
};

/** The Slack adapter (only once the channel is configured: its platform library loads with this module). */
export function slack(kit: ChannelKit<SlackItem>, ctx: PluginContext<typeof manifest>): ChannelAdapter<SlackItem, SlackChunk> {
  const botToken = setting(ctx, 'chatDBotToken', '');
  const appToken = setting(ctx, 'chatDAppToken', '');
  const apiUrl = setting(ctx, 'chatDApiUrl', 'https://slack.com/api/');
  const slackApiUrl = apiUrl.endsWith('/') ? apiUrl : `${apiUrl}/`;
  const bot: { userId?: string | undefined; name?: string | undefined; team?: string | undefined } = {};

  const app = new App({
    token: botToken,
    receiver: new SupervisedReceiver(),
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
  const replyTarget = (action: Action) => {
    const r = action.metadata.replyTo ?? {};
    const channel = r.chatId != null ? String(r.chatId) : '';
    if (!CONVERSATION_ID.test(channel))
      throw coded('KEEL_E_CHANNEL_SEND_FAILED', `Action ${action.id} has no Slack conversation to answer (metadata.replyTo.chatId).`);
    const thread = r.threadTs ?? r.threadId;
    return { channel, thread: thread != null ? String(thread) : undefined };
  };

  // ---------------------------------------------------------------- threads the bot takes part in
  // Slack has no "reply to a message" as Discord has: people go on talking to the bot in a thread (docs/slack.md).
  const threads = new ThreadFollow(kit.store, () => setting(ctx, 'chatDFollowThreads', true) === true);
  threads.prune();
  /** A Slack thread's key: the conversation and the thread's own ts (never a reply's). */
  const threadOf = (channel: string, ts: string) => `${channel}:${ts}`;
  /** With the record of a message addressed to the bot in a channel: its thread (or the one it may start) from now. */
  const partOf = (ev: SlackMessageEvent) =>
    ev.channel_type !== 'im' && bot.userId && mentions(ev.text ?? '', bot.userId)
      ? [threads.entry(threadOf(ev.channel, ev.thread_ts ?? ev.ts))]
      : [];

  // ---------------------------------------------------------------- catch-up from the history
  // Built in start(): it reads the runtime's stop signal, which exists once the adapter is returned.
  let catchUp!: CatchUp;

  const threadStarts = new ThreadStarts({ ingress: { payload: (id) => kit.ingress.payload(id) }, client, log: ctx.log });
  const slackNames = new SlackNames({ client, log: ctx.log });
  const statusLine = () => {
    const s = kit.status();
    return `Slack: ${s.state}${s.botUsername ? ` as @${s.botUsername}` : ''}${bot.team ? ` in ${bot.team}` : ''}.`;
  };

  return {
    // One lock for the connection and the sends: a Redis lease fences each send by its token (lease.ts).
    lock: connectionLock(ctx, 'chatD', appToken),
    // Slack has no typing indicator for bots over Socket Mode: feedback is the status message, edited in place.
    policy: RATE_POLICIES.slack,
    classify: classifySlack,
    // A message the bot posts: the thread it is in, or one hung under it, is a thread it takes part in.
    sendChunk: (c, _i, channel) =>
      sendChunk(client, channel, c).then((ts) => {
        if (c.kind === 'text') threads.posted(threadOf(channel, c.thread ?? ts));
        return ts;
      }),
    badAddress: (to) =>
      CONVERSATION_ID.test(to)
        ? undefined
        : `"${to}" is not a Slack conversation id (C... channel, G... private channel, D... direct message).`,
    chunks: (m, options) => {
      const thread = options.threadId ?? options.replyToMessageId;
      const at = thread ? { thread } : {};
      const text = m.text ?? '';
      const texts = (
        options.format === 'plain' ? renderChunks(text, 'plain', { limit: 2800 }).map(slackEscape) : renderChunks(text, 'slack')
      ).map((t): SlackChunk => ({ kind: 'text', text: t, ...at }));
      // Buttons (an approval request's) go with the last text chunk, as Block Kit under its text.
      const last = texts.at(-1);
      const blocks = last?.kind === 'text' ? blocksOf(last.text, m.buttons) : undefined;
      if (last && blocks) texts[texts.length - 1] = { ...last, blocks } as SlackChunk;
      const files = (m.files ?? []).map(
        (f): SlackChunk => ({ kind: 'file', path: f.path, ...(f.caption ? { comment: f.caption } : {}), ...at }),
      );
      return [...texts, ...files];
    },
    target: (action) => {
      const t = replyTarget(action);
      return { chatId: t.channel, options: t.thread ? { threadId: t.thread } : {}, progressKey: where(t.channel, t.thread) };
    },
    typing: false,
    transport: (outbox) => ({
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
      // Rejects when Slack refuses: the kit then edits it to a last line (recover) instead.
      finish: async (key, id) => void (await client.chat.delete({ channel: split(key).channel, ts: id })),
    }),

    // ---------------------------------------------------------------- connection
    connection: {
      stallMs: setting(ctx, 'chatDSocketTimeout', 30) * 1000,
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
              if (item.payload.kind === 'message') {
                const ev = item.payload.event;
                catchUp.live(ev.channel, ev.channel_type);
                // While the conversation's history is read, its live messages wait, so they are recorded after it.
                const gate = catchUp.gate(ev.channel);
                if (gate) await gate;
                // A burst shares one transaction; the ack waits until this item (and its conversation's history
                // cursor, which only moves forward) is in it. The cursor of a conversation whose history is still to
                // be read stays, so that the read covers what was missed before this message.
                // A thread reply moves its thread's cursor too (that thread's replies are read after it at a catch-up);
                // a thread first heard of while its conversation is behind is then read from its start.
                const thread = ev.thread_ts && ev.thread_ts !== ev.ts ? ev.thread_ts : undefined;
                await kit.recordSoon(item, [
                  ...partOf(ev),
                  {
                    key: cursorKey(ev.channel),
                    value: (stored) => (stored !== undefined && catchUp.behind(ev.channel) ? stored : newerTs(stored, ev.ts)),
                  },
                  ...(thread
                    ? [
                        {
                          key: threadKey(ev.channel, thread),
                          value: (stored: string | undefined) => (catchUp.behind(ev.channel) ? (stored ?? thread) : newerTs(stored, ev.ts)),
                        },
                      ]
                    : []),
                ]);
              } else if (item.payload.kind === 'edit') {
                // After the history being read before it (the message it edits may be in it); no cursor moves. An
                // edit that adds the bot's mention, in time to count, makes its thread one the bot takes part in.
                const ev = item.payload.event;
                catchUp.live(ev.channel, ev.channel_type);
                const gate = catchUp.gate(ev.channel);
                if (gate) await gate;
                await kit.recordSoon(item, Date.now() - Number(ev.ts) * 1000 <= EDIT_WINDOW_MS ? partOf(ev) : []);
              } else if (item.payload.kind === 'delete') {
                const gate = catchUp.gate(item.payload.channel);
                if (gate) await gate;
                await kit.recordSoon(item);
              } else await kit.recordSoon(item);
            },
          },
          signal,
          {
            live,
            connected: () => {
              connected(`as @${bot.name} (Slack user ${bot.userId}) in workspace ${bot.team}`);
              // What was said while there was no connection (and Slack did not send again) is read from the history.
              catchUp.afterConnect();
            },
          },
        );
      },
    },

    status: (): Partial<ChatDStatus> => ({
      ...(bot.name ? { botUsername: bot.name } : {}),
      ...(catchUp.lastCatchUpAt ? { lastCatchUpAt: catchUp.lastCatchUpAt } : {}),
      caughtUp: catchUp.caughtUp,
    }),

    // ---------------------------------------------------------------- inbound
    receive: async (recorded, turn) => {
      const rt = kit.runtime;
      const p = recorded.payload;
      // A deletion: after the chat's earlier messages are in the queue (the action it cancels may be one of them).
      if (p.kind === 'delete') {
        await turn.previous;
        return rt.deleted(messageKey(p.channel, p.ts));
      }
      // A tap on an approval button: decided at once, and the chat is not held while an approved command runs.
      if (p.kind === 'tap') {
        turn.ordered();
        return approvalTap(ctx, client, rt.outbox, p);
      }
      // An edit is read as its message is (gating, names, quote, files), with the text it has now.
      const item: IngressItem<typeof p> = { ...recorded, payload: p };
      const autoReply = setting<boolean>(ctx, 'chatDAutoReplyEnabled', false) === true;
      const follows = (channel: string, threadTs: string) => threads.follows(threadOf(channel, threadTs));
      const gated = toInbound(item, bot.userId, follows);
      const acted = autoReply || gated.mentioned === true || gated.command !== undefined;
      const ev = p.kind === 'command' ? undefined : p.event;
      // A mention in a thread reply (or any reply in a direct message's thread) quotes the thread's first message,
      // which the reply answers; a follow-up in a followed thread does not repeat it.
      const quoting =
        acted &&
        ev?.thread_ts !== undefined &&
        ev.thread_ts !== ev.ts &&
        !gated.command &&
        (ev.channel_type === 'im' || (bot.userId !== undefined && mentions(ev.text ?? '', bot.userId)));
      // People are named for the agent (sender, mentions, the quoted author and its mentions) only in messages that
      // become actions; the sender's names are asked while the thread's first message is read.
      const people = (m: { user?: string; text?: string } | undefined) =>
        m ? [m.user ?? '', ...mentionedIds(m.text ?? '')].filter((id) => id !== bot.userId) : [];
      const [first, own] = await Promise.all([
        quoting ? threadStarts.of(ev.channel, ev.thread_ts!, rt.signal) : undefined,
        acted ? slackNames.of(people(ev)) : undefined,
      ]);
      const names = first && own ? new Map([...own, ...(await slackNames.of(people(first)))]) : own;
      const plain = names?.size ? toInbound(item, bot.userId, follows, names) : gated;
      const quoted = first ? quoteOf(first, bot.userId, names) : undefined;
      // Files of a message the gating will ignore are not fetched (a busy channel would fill the disk).
      const files = acted ? ev?.files : undefined;
      const withFiles = await withSlackFiles(plain, files, {
        home: ctx.home,
        botToken,
        apiUrl: slackApiUrl,
        log: ctx.log,
        signal: rt.signal,
        ...(p.kind === 'edit' ? { edit: p.editedTs } : {}),
      });
      const inbound = quoted ? { ...withFiles, quoted } : withFiles;
      const options: Parameters<typeof rt.handle>[1] = {
        turn,
        statusLine,
        // In the thread the command came in, never a new thread on the command itself.
        answer: (text) =>
          rt.send(inbound.chatId, text, {
            idempotencyKey: `cmd:${item.messageId}`,
            ...(inbound.threadId ? { threadId: inbound.threadId } : {}),
          }),
      };
      if (p.kind === 'edit') return rt.edited({ inbound, editedAt: p.editedTs, sentAt: Number(p.event.ts) * 1000 }, options);
      return rt.handle(inbound, options);
    },

    async react(chatId, messageId, emoji) {
      if (!CONVERSATION_ID.test(chatId))
        throw coded('KEEL_E_INVALID_ARGUMENT', `"${chatId}" is not a Slack conversation id (C..., G... or D...).`);
      const name = reactionName(emoji);
      if (!name) return { native: false };
      try {
        await kit.runtime.outbox.edit(chatId, () => client.reactions.add({ channel: chatId, timestamp: messageId, name }));
      } catch (e) {
        if (slackErrorCode(e) !== 'already_reacted') throw e;
      }
      return { native: true, reaction: name };
    },

    start() {
      const rt = kit.runtime;
      catchUp = new CatchUp({
        client,
        store: rt.store,
        log: ctx.log,
        signal: rt.signal,
        interval: () => setting(ctx, 'chatDCatchUpInterval', 300),
        connected: () => kit.connection?.state === 'connected',
        rebuild: (reason) => kit.connection?.restart(reason),
        record: (_channel, events, cursors) => {
          const items = events.map((ev) => messageItemOf(ev, bot.userId)).filter((it) => it !== undefined);
          // Nothing was acknowledged for these: a commit a power cut undoes takes the cursors with it, and the next
          // catch-up reads them again. So no fsync here.
          const fresh = kit.ingress.record(
            items,
            [
              ...cursors.map((c) => ({ key: c.key, value: (stored: string | undefined) => newerTs(stored, c.newest) })),
              ...events.flatMap(partOf),
            ],
            { durability: 'NORMAL' },
          );
          if (fresh.length) kit.connection?.inbound();
          return fresh.map((it) => (it.payload as Extract<SlackItem, { kind: 'message' }>).event);
        },
      });
      ctx.skills.register('send_chatD', async (args, call) => {
        // A name instead of an id ("the user", "here") means the conversation of the current message.
        let to = args.channel_id.trim();
        if (!CONVERSATION_ID.test(to) && call.action?.source === 'chatD' && !/^[CGD][A-Za-z0-9]*$/.test(to))
          to = replyTarget(call.action).channel;
        if (!CONVERSATION_ID.test(to))
          throw coded(
            'KEEL_E_INVALID_ARGUMENT',
            `channel_id "${args.channel_id}" is not a Slack conversation id: it starts with C (channel), G (private channel) or D (direct message), then capitals and digits.`,
          );
        // The same call in the same action (a re-run after a crash) is delivered once.
        const key = skillSendKey(call.action, 'send_chatD', [to, args.message]);
        const sent = await rt.send(to, args.message, key ? { idempotencyKey: key } : {});
        return { channel: 'chatD', channel_id: to, ts: sent.messageId, messageIds: sent.messageIds };
      });
      catchUp.start();
    },

    // Before the connection stops: the catch-up notes, while still connected, when the channel was last up.
    async stopping() {
      await catchUp.stop();
    },
  };
}
