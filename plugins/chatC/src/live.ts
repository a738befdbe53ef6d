/**
 * chatC (Discord): the adapter `defineChannel` runs. Gateway messages recorded durably before anything acts on them
 * (and messages missed while Keel was down fetched from the channel history on the next READY), replies rendered
 * once as Discord Markdown, cut to 2,000 characters, threaded to the message and delivered with an enforced nonce
 * per chunk, slash commands answered by the kit's command logic, the platform's error classification. The kit owns
 * the rest (ledger, rate limits, supervision, lock, ingress, status). See docs/discord.md and docs/channels.md.
 */
import { errorsFor } from '../../../sdk/errors.js';
import type { REST } from 'discord.js';
import { errorMessage, type Action, type PluginContext } from '../../../sdk/index.js';
import {
  BUILTIN_COMMANDS,
  type ChannelAdapter,
  type ChannelKit,
  type ChannelRuntime,
  type ConnectionSupervisor,
  editKey,
  isBuiltin,
  connectionLock,
  platformNonce,
  RATE_POLICIES,
  renderChunks,
  runCommand,
  setting,
  ThreadFollow,
} from '../../../sdk/channel-kit/index.js';
import type manifest from '../manifest.js';
import { Backfill, cursorKey, newer } from './backfill.js';
import { classifyDiscord, componentsOf, type DcChunk, fatalMessage, makeRest, sendChunkTo, SNOWFLAKE } from './discord.js';
import { approvalTap, isApprovalTap } from './approval-tap.js';
import { ThreadStarts } from './thread-start.js';
import { gatewayConnector, type GatewayInfo } from './gateway.js';
import { addressesBot, type DcInboundMessage, type DcPayload, interactionToInbound, isUserMessage, messageToInbound } from './inbound.js';
import { registerSkills } from './skills.js';
import { SlashAnswers } from './slash.js';

const coded = errorsFor('chatC');

const LIMIT = 2000;

/** The Discord adapter (only once the channel is configured: its platform library loads with this module). */
export function discord(kit: ChannelKit<DcPayload>, ctx: PluginContext<typeof manifest>): ChannelAdapter<DcPayload, DcChunk> {
  const token = setting(ctx, 'chatCToken', '');
  const apiUrl = setting(ctx, 'chatCApiUrl', 'https://discord.com/api');
  const rest: REST = makeRest(token, apiUrl);
  const bot: { id?: string; username?: string; applicationId?: string; guilds?: number; selfRoles?: Map<string, string> } = {};
  const dms = new Map<string, string>();
  const slash = new SlashAnswers(rest, ctx.log);
  const { store } = kit;

  const replyTarget = (action: Action) => {
    const r = action.metadata.replyTo ?? {};
    const chatId = r.chatId !== undefined && r.chatId !== null ? String(r.chatId) : '';
    if (!SNOWFLAKE.test(chatId))
      throw coded('KEEL_E_CHANNEL_SEND_FAILED', `Action ${action.id} has no chatC channel to answer (metadata.replyTo.chatId).`);
    const messageId = r.messageId != null && SNOWFLAKE.test(String(r.messageId)) ? String(r.messageId) : undefined;
    return { chatId, options: messageId ? { replyToMessageId: messageId } : {} };
  };

  // Threads the bot takes part in: a message there needs no mention while auto-reply is off (docs/discord.md).
  const threads = new ThreadFollow(store, () => setting(ctx, 'chatCFollowThreads', true) === true);
  threads.prune();

  // ---------------------------------------------------------------- inbound
  /**
   * Messages of one channel, recorded with that channel's history cursor in one transaction: moved to `newest` (the
   * newest id the history read), or by live messages unless the channel's history is still to be read.
   * (The ingress itself, not `kit.record`: a history read brings again what the gateway recorded, no redelivery.)
   */
  const recordMessages = (messages: DcInboundMessage[], newest?: string): DcInboundMessage[] => {
    const fresh = messages.filter((m) => isUserMessage(m, bot.id));
    if (!fresh.length && !newest) return [];
    const channelId = (fresh[0] ?? messages[0])!.channel_id;
    const latest = fresh.reduce<string | undefined>((a, m) => newer(a, m.id), newest);
    const recorded = kit.ingress.record(
      fresh.map(toItem),
      [...(latest ? [historyCursor(channelId, latest, newest !== undefined)] : []), ...fresh.flatMap(partOf)],
      // Discord is never acknowledged (a new session replays nothing); a power cut that undoes this commit undoes
      // the cursor with it, and the history after the cursor is read again at the next READY. So no fsync here.
      { durability: 'NORMAL' },
    );
    if (recorded.length) kit.connection?.inbound();
    return recorded.map((it) => (it.payload as { message: DcInboundMessage }).message);
  };
  const toItem = (message: DcInboundMessage) => ({ messageId: message.id, chatId: message.channel_id, payload: { message } });
  /** With the record of a message addressed to the bot in a thread: that thread is taken part in from now. */
  const partOf = (m: DcInboundMessage) =>
    m.position !== undefined && m.guild_id !== undefined && addressesBot(m, bot.id, bot.selfRoles?.get(m.guild_id))
      ? [threads.entry(m.channel_id)]
      : [];
  /** The channel's history cursor, moved to `latest`; by a live message only once the channel's history was read. */
  const historyCursor = (channelId: string, latest: string, fromHistory: boolean) => ({
    key: cursorKey(channelId),
    value: (stored: string | undefined) =>
      !fromHistory && stored !== undefined && backfill?.behind(channelId) ? stored : newer(stored, latest),
  });
  /**
   * A live message: recorded with the others of this turn of the event loop in one commit (a burst is one write,
   * not one per message), and handled once that commit is done.
   */
  const recordLive = (m: DcInboundMessage): Promise<void> | void => {
    if (!isUserMessage(m, bot.id)) return;
    return kit.ingress
      .recordSoon(toItem(m), [historyCursor(m.channel_id, m.id, false), ...partOf(m)], { durability: 'NORMAL' })
      .then((fresh) => {
        if (fresh) kit.connection?.inbound();
      });
  };
  /** An edit: its own record (one per version of the message), no history cursor (the message was counted). */
  const recordEdit = (m: DcInboundMessage): Promise<void> =>
    kit.ingress
      .recordSoon({ messageId: editKey(m.id, m.edited_timestamp!), chatId: m.channel_id, payload: { edit: m } }, [], {
        durability: 'NORMAL',
      })
      .then((fresh) => {
        if (fresh) kit.connection?.inbound();
      });
  const recordFailed = (m: DcInboundMessage) => (e: unknown) =>
    // Its cursor did not move: the history read of the next session brings it.
    ctx.log.warn(`chatC: could not record message ${m.id} of channel ${m.channel_id}: ${errorMessage(e)}`);

  // Reads with a client of their own that waits out rate limits, at half of Discord's global rate (replies keep room).
  const readRest = makeRest(token, apiUrl, { waitOnRateLimit: true, globalRequestsPerSecond: 25 });
  /** The history catch-up: built at start(), once the runtime (whose stop signal it ends with) exists. */
  let backfill: Backfill | undefined;
  const startBackfill = (rt: ChannelRuntime, supervisor: ConnectionSupervisor): Backfill => {
    const backfill = new Backfill({
      rest: readRest,
      store,
      log: ctx.log,
      signal: rt.signal,
      record: (_channelId, messages, newest) => recordMessages(messages, newest),
      interval: () => setting(ctx, 'chatCCatchUpInterval', 300),
      connected: () => supervisor.state === 'connected',
      rebuild: (reason) => supervisor.restart(reason),
    });
    backfill.start();
    return backfill;
  };
  /** A channel's live messages wait for its history read (none before the catch-up exists). */
  const gate = (channelId: string) => backfill?.gate(channelId);
  const info: GatewayInfo = {};

  const discordStatusLine = () => {
    const s = kit.status();
    return `Discord: ${s.state}${s.botUsername ? ` as ${s.botUsername}` : ''}, ${s.guilds ?? 0} server(s).`;
  };

  const threadStarts = new ThreadStarts({ ingress: { payload: (id) => kit.ingress.payload(id) }, rest, log: ctx.log });

  return {
    // One lock for the connection and the sends: a Redis lease fences each send by its token (lease.ts).
    lock: connectionLock(ctx, 'chatC', token),
    policy: RATE_POLICIES.discord,
    classify: classifyDiscord,
    // Each message the bot posts: a thread started from it (a thread's id is its first message's) is followed.
    sendChunk: (c, _i, target) =>
      sendChunkTo(rest, target, c, dms).then((id) => {
        threads.posted(id);
        return id;
      }),
    badAddress: (to) => (SNOWFLAKE.test(to) ? undefined : `"${to}" is not a Discord channel id (a snowflake of 17 to 20 digits).`),
    chunks: (m, options, key) => {
      const replyTo = options.replyToMessageId && SNOWFLAKE.test(options.replyToMessageId) ? options.replyToMessageId : undefined;
      const parts: Array<Omit<DcChunk, 'nonce'>> = [
        ...renderChunks(m.text ?? '', options.format === 'plain' ? 'plain' : 'discord', { limit: LIMIT }).map((content) => ({
          kind: 'text' as const,
          content,
        })),
        ...(m.files ?? []).map((f) => ({ kind: 'file' as const, path: f.path, ...(f.caption ? { caption: f.caption } : {}) })),
      ];
      // Buttons (an approval request's) go with the last text chunk, under what they answer.
      const components = componentsOf(m.buttons);
      const lastText = parts.map((p) => p.kind).lastIndexOf('text');
      // The nonce is part of the stored chunk: a resumed chunk carries the nonce of its first attempt.
      return parts.map(
        (p, i) =>
          ({
            ...p,
            nonce: platformNonce(key, i),
            ...(i === 0 && replyTo ? { replyTo } : {}),
            ...(components && i === lastText ? { components } : {}),
          }) as DcChunk,
      );
    },
    target: replyTarget,
    // Discord shows "typing" for 10 s after each call.
    refreshMs: 8000,
    transport: (outbox) => ({
      typing: async (channelId) => void (await rest.post(`/channels/${channelId}/typing`)),
      status: async (channelId, text, id) => {
        const content = renderChunks(text, 'discord', { limit: LIMIT })[0] ?? text.slice(0, LIMIT);
        if (id) {
          await outbox.edit(channelId, () => rest.patch(`/channels/${channelId}/messages/${id}`, { body: { content } }));
          return id;
        }
        return outbox.edit(
          channelId,
          async () => ((await rest.post(`/channels/${channelId}/messages`, { body: { content, flags: 1 << 12 } })) as { id: string }).id,
        );
      },
      // Rejects when Discord refuses: the kit then edits it to a last line (recover) instead.
      finish: async (channelId, id) => void (await rest.delete(`/channels/${channelId}/messages/${id}`)),
    }),

    connection: {
      // Three heartbeat intervals without a dispatch or a heartbeat ACK (discord.js itself acts after one).
      stallMs: () => (info.heartbeatMs ? info.heartbeatMs * 3 + 5000 : 90_000),
      fatal: fatalMessage,
      // `connected` (after `ready`) also resumes what a crash left unsent: the kit does that.
      connect: gatewayConnector({
        token,
        apiUrl,
        log: ctx.log,
        info,
        on: {
          ready: async (me) => {
            bot.id = me.botId;
            bot.username = me.username;
            if (me.applicationId) bot.applicationId = me.applicationId;
            if (bot.applicationId) {
              const body = BUILTIN_COMMANDS.map((c) => ({ name: c.command, description: c.description, type: 1 }));
              await rest
                .put(`/applications/${bot.applicationId}/commands`, { body })
                .catch((e) => ctx.log.warn(`Registering the slash commands failed: ${errorMessage(e)}`));
            }
            // A new session does not replay what was said while Keel was away: read it from the history. A channel's
            // live messages wait for its read, so that its messages are still recorded (and handled) in order.
            backfill?.afterReady(me.channels);
          },
          message: (m) => {
            const wait = gate(m.channel_id);
            if (wait) void wait.then(() => recordLive(m)).catch(recordFailed(m));
            else void Promise.resolve(recordLive(m)).catch(recordFailed(m));
          },
          // An edit waits for the channel's history read as a message does: the message it edits is recorded first.
          edit: (m) => {
            if (!m.edited_timestamp || !isUserMessage(m, bot.id)) return; // an unfurl, a bot's: nothing was edited
            const wait = gate(m.channel_id);
            if (wait) void wait.then(() => recordEdit(m)).catch(recordFailed(m));
            else void Promise.resolve(recordEdit(m)).catch(recordFailed(m));
          },
          deleted: (d) => {
            // Only a message chatC recorded can have an action to take back.
            if (!kit.ingress.payload(d.id)) return;
            void kit.ingress
              .recordSoon({ messageId: `${d.id}:deleted`, chatId: d.channel_id, payload: { deleted: d } }, [], { durability: 'NORMAL' })
              .catch(recordFailed({ id: d.id, channel_id: d.channel_id } as DcInboundMessage));
          },
          interaction: (i) => {
            // A tap on a button: only the approval buttons are the bot's to answer (discord.ts componentsOf).
            if (i.type === 3 && !isApprovalTap(i)) return;
            let fresh: unknown[];
            try {
              fresh = kit.ingress.record([{ messageId: `i:${i.id}`, chatId: i.channel_id ?? 'dm', payload: { interaction: i } }]);
            } catch (e) {
              // Not durable (a full disk, a locked store): not acknowledged either, so Discord tells the user it
              // failed. Thrown here it would escape discord.js's event dispatch and end the process.
              ctx.log.warn(
                `chatC: could not record the ${i.type === 3 ? 'button tap' : `slash command /${i.data?.name ?? '?'}`} (${errorMessage(e)}); it is not answered.`,
              );
              return;
            }
            // Acknowledged now (a replayed one was already): the answer may wait behind the channel's earlier messages.
            if (fresh.length && i.type === 3) slash.deferUpdate(i);
            else if (fresh.length && interactionToInbound(i)) slash.defer(i);
            kit.connection?.inbound();
          },
          guilds: (n, selfRoles) => {
            bot.guilds = n;
            bot.selfRoles = selfRoles;
          },
        },
      }),
    },

    status: () => ({
      ...(bot.username ? { botUsername: bot.username } : {}),
      ...(bot.guilds !== undefined ? { guilds: bot.guilds } : {}),
      ...(backfill?.lastCatchUpAt ? { lastCatchUpAt: backfill.lastCatchUpAt } : {}),
      caughtUp: backfill?.caughtUp ?? 0,
    }),

    receive: async ({ payload }, turn) => {
      const rt = kit.runtime;
      if ('interaction' in payload && payload.interaction.type === 3) {
        // Decided at once, not behind the chat's earlier messages; and the chat is not held while a command runs.
        turn.ordered();
        return approvalTap(ctx, rest, slash, payload.interaction, bot.applicationId);
      }
      if ('interaction' in payload) {
        const i = payload.interaction;
        const inbound = interactionToInbound(i);
        if (!inbound) return 'skipped';
        // Reached while stopping: left recorded and answered after the next start (the answer would say "stopped").
        if (rt.signal.aborted) throw coded('KEEL_E_CANCELLED', 'stopping');
        // The answer reads the queue: what the channel said before the command is in it.
        await turn.previous;
        const text = isBuiltin(inbound.command) ? await runCommand(ctx, inbound, BUILTIN_COMMANDS, discordStatusLine) : 'Unknown command.';
        const [first, ...rest2] = renderChunks(text, 'discord', { limit: LIMIT });
        if (!(await slash.answer(i, bot.applicationId, first ?? '…', inbound.command!))) return `command:${inbound.command}:unanswered`;
        if (rest2.length) await rt.send(inbound.chatId, rest2.join('\n\n'), { idempotencyKey: `cmd:${inbound.messageId}` });
        return `command:${inbound.command}`;
      }
      if ('deleted' in payload) return rt.deleted(payload.deleted.id);
      const message = 'edit' in payload ? payload.edit : payload.message;
      const autoReply = setting<boolean>(ctx, 'chatCAutoReplyEnabled', false) === true;
      const inbound = await messageToInbound(message, {
        home: ctx.home,
        botId: bot.id,
        ...(message.guild_id && bot.selfRoles?.has(message.guild_id) ? { selfRoleId: bot.selfRoles.get(message.guild_id)! } : {}),
        log: ctx.log,
        autoReply,
        signal: rt.signal,
        follows: (channelId) => threads.follows(channelId),
        threadStart: (threadId) => threadStarts.of(threadId, rt.signal),
      });
      if ('edit' in payload) {
        const sentAt = Date.parse(message.timestamp ?? '');
        return rt.edited(
          { inbound, editedAt: message.edited_timestamp!, ...(Number.isFinite(sentAt) ? { sentAt } : {}) },
          { statusLine: discordStatusLine, turn },
        );
      }
      return rt.handle(inbound, { statusLine: discordStatusLine, turn });
    },

    async react(chatId, messageId, emoji) {
      if (!SNOWFLAKE.test(chatId) || !SNOWFLAKE.test(messageId))
        throw coded(
          'KEEL_E_INVALID_ARGUMENT',
          `react on Discord needs a channel id and a message id of 17 to 20 digits (got "${chatId}", "${messageId}").`,
        );
      await kit.runtime.outbox.edit(chatId, () =>
        rest.put(`/channels/${chatId}/messages/${messageId}/reactions/${encodeURIComponent(emoji)}/@me`),
      );
      return { native: true };
    },

    start() {
      registerSkills(ctx, { send: kit.runtime.send });
      backfill = startBackfill(kit.runtime, kit.connection!);
    },
    // Before the connection stops: a catch-up in progress ends, and the time Keel was last connected is noted.
    async stopping() {
      await backfill?.stop();
    },
    async stop() {
      // Each REST client runs two sweep timers of its own (hourly and 4-hourly) until told to stop: a restarted
      // channel would otherwise leave them, and the clients with the token, behind.
      for (const r of [rest, readRest]) {
        r.clearHashSweeper();
        r.clearHandlerSweeper();
      }
    },
  };
}
