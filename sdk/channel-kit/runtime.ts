/**
 * The wiring every channel plugin shares around the kit's parts, so a platform plugin holds only what is its own
 * (its connection, its inbound shape, its chunk format): the channel's store and outbox, the send path (address
 * check → chunks → `messageOut` → ledger), an action's replies under keys that are the same in every run of it,
 * progress gated by the progress settings, the one failure notice, built-in commands and gated `receive`, and the
 * order things stop in.
 */
import { createHash } from 'node:crypto';
import {
  outgoing,
  receive,
  receiveInto,
  setting,
  type ChannelCapability,
  type ChannelStatus,
  type InboundMessage,
  type OutboundMessage,
  type ProgressUpdate,
  type SendOptions,
  type SentMessage,
} from '../channel.js';
import { errorMessage, pluginError, PluginErrorCodes } from '../errors.js';
import type { PluginContext } from '../plugin.js';
import type { Action, Json } from '../types.js';
import { BUILTIN_COMMANDS, isBuiltin, runCommand } from './commands.js';
import type { IngressTurn } from './ingress.js';
import type { ConnectionLock, SendFence } from './lease.js';
import { type ChunkSender, DeliveryLedger } from './ledger.js';
import { sharedLedger } from './shared-ledger.js';
import { Outbox } from './outbox.js';
import { type EditedMessage, routeDelete, routeEdit } from './edits.js';
import { HandedInputs } from './handed.js';
import { failureNotice, ProgressFeedback, type ProgressTransport } from './progress.js';
import { RateLimiter, type RatePolicy, type SendErrorDecision } from './rate-limit.js';
import { ChannelStore } from './store.js';

/**
 * A ledger key for a skill's send inside an action: the same call in the same action (a re-run after a crash)
 * has the same key, so it is delivered once. Without an action, no key (a fresh one per send).
 * @example const key = skillSendKey(call.action, 'send_chatD', [to, args.message]);
 */
export function skillSendKey(action: Action | undefined, skill: string, args: unknown): string | undefined {
  if (!action) return undefined;
  return `${action.id}:${skill}:${createHash('sha256').update(JSON.stringify(args)).digest('hex').slice(0, 16)}`;
}

/** Where the answers of an action go on a platform. */
export interface ReplyTarget {
  chatId: string;
  /** How the answers are threaded there (the message answered, a thread). */
  options: SendOptions;
  /** The key progress shows under when it is not the chat (Slack: a thread of a channel). */
  progressKey?: string;
  /**
   * What else the platform needs to answer in that thread, given to `chunks` as `options.via` for every answer of
   * the action (its replies and the failure notice): email's subject and References.
   */
  via?: Json;
}

/** The options `chunks` gets: a send's, and the `via` of the action's reply target when it answers an action. */
export type ChunkOptions = SendOptions & { via?: Json };

export interface ChannelRuntimeOptions<C extends Json> {
  ctx: PluginContext;
  /** The channel's name (`chatA`): its actions' `source` and its store's folder. */
  name: string;
  policy: RatePolicy;
  /** The platform's error classification (429 with its wait, transient, permanent). */
  classify(error: unknown): SendErrorDecision;
  /** Sends one ledgered chunk, returns the platform's id for it. */
  sendChunk: ChunkSender<C>;
  /** Why `to` is not an address on this platform (the error the caller gets), or undefined when it is. */
  badAddress(to: string): string | undefined;
  /** The ledger entries of one message under `key`: its text rendered for the platform (or plain), then its files. */
  chunks(message: OutboundMessage, options: ChunkOptions, key: string): C[];
  /** Where the answers of `action` go; throws when it has none on this platform. */
  target(action: Action): ReplyTarget;
  /** Typing and status message; `outbox.edit` keeps them under the edit rate limit. */
  transport(outbox: Outbox): ProgressTransport;
  /** Typing refresh period (the platform's typing lifetime less a margin). */
  refreshMs?: number;
  /** False where bots have no typing indicator (Slack over Socket Mode): progress is then the status message only. */
  typing?: boolean;
  /**
   * False where a status message cannot be taken back without a trace (WhatsApp leaves "This message was deleted"
   * for everyone): progress is then typing only, whatever `progressFeedbackTypingOnly` says.
   */
  statusMessages?: boolean;
  /**
   * How the one failure notice begins (`failureNotice`'s lead; default `Sorry, that did not work`): for a channel
   * whose clients already know another wording (gateway-chat: `Sorry, this failed`).
   */
  failureLead?: string;
  /** Dedupe memory kept in the store, in days (default: the `channelHistoryKeepDays` setting, 30). */
  keepDays?: number;
  /**
   * The connection's lock (`connectionLock(ctx, name, credential)`, the one the supervisor holds). When it is the
   * Redis lease, a delivery that starts while this process holds it is fenced by its token (lease.ts): a holder
   * that lost the lease without knowing yet has its sends refused (`KEEL_E_LEASE_LOST`).
   */
  lock?: ConnectionLock;
  /** The channel's store, when the caller opened it already (defineChannel); default: opened here. */
  store?: ChannelStore;
}

/** What `createChannelRuntime` gives a channel plugin. */
export interface ChannelRuntime {
  readonly store: ChannelStore;
  readonly outbox: Outbox;
  readonly progress: ProgressFeedback;
  /** Aborted when the channel stops (pass it to platform calls and downloads). */
  readonly signal: AbortSignal;
  send(to: string, message: string | OutboundMessage, options?: SendOptions): Promise<SentMessage>;
  /** The n-th answer of `action`, under `<actionId>:r<n>`: a re-run after a crash sends only what is missing. */
  reply(action: Action, message: string | OutboundMessage): Promise<SentMessage>;
  showProgress(action: Action, update: ProgressUpdate): void;
  /** At each (re)connect: sends what a crash left unconfirmed and ends status messages a killed process left. */
  resume(): void;
  /**
   * An inbound message: a built-in command is answered here (`answer` delivers the text; default: a ledgered send
   * under `cmd:<messageId>`), anything else goes to `receive` gated by `<name>AutoReplyEnabled`. Returns the
   * ingress outcome.
   */
  handle(
    inbound: InboundMessage,
    o: {
      statusLine: () => string;
      menu?: Array<{ command: string; description: string }>;
      answer?: (text: string) => Promise<unknown>;
      /** The ingress turn: `receive` says when the push is ordered (the chat's next message may go). */
      turn?: IngressTurn;
    },
  ): Promise<string>;
  /**
   * An edit of an inbound message (`inbound.messageId` the message's own id, `inbound.text` as it reads now): it
   * amends the action in place while that waits, is handed to it while it runs, and is a new message (through `handle`,
   * with the same options) once it was answered or if the earlier version was ignored. See edits.ts.
   */
  edited(e: EditedMessage, o: Parameters<ChannelRuntime['handle']>[1]): Promise<string>;
  /** A deleted inbound message: its waiting or running action is cancelled. Returns the ingress outcome. */
  deleted(messageId: string): Promise<string>;
  /** Input handed to running actions (button presses, edits), on record until each action has settled. */
  readonly handed: HandedInputs;
  /** The `channel:<name>` capability; `reply` and `react` as the platform needs. */
  capability(o: { status: () => ChannelStatus } & Partial<Pick<ChannelCapability, 'reply' | 'react'>>): ChannelCapability;
  /** The plugin's health from its status. */
  health(status: () => ChannelStatus): () => { ok: boolean; message: string };
  /** Stops in order: abort platform calls, `connection` (the supervisor or app), progress, `ingress`, the store. */
  stop(connection: () => Promise<unknown>, ingress?: { close(): Promise<void> }): Promise<void>;
}

/**
 * @example
 * const rt = createChannelRuntime({ ctx, name: 'chatD', policy: RATE_POLICIES.slack, classify: classifySlack,
 *   sendChunk: (c, _i, ch) => sendChunk(client, ch, c), badAddress, chunks, target, transport: (o) => ({ ... }) });
 * ctx.provide('channel:chatD', rt.capability({ status }));
 */
export function createChannelRuntime<C extends Json>(o: ChannelRuntimeOptions<C>): ChannelRuntime {
  const { ctx, name } = o;
  const store = o.store ?? ChannelStore.open(ctx.home, name);
  // Handled messages and sent replies are kept `channelHistoryKeepDays`: pruned at start and daily (a Keel that runs
  // for months without a restart must not keep every message it ever saw).
  const stopPruning = store.pruneDaily(
    () => o.keepDays ?? setting<number>(ctx, 'channelHistoryKeepDays', 30),
    (e) => ctx.log.warn(`${name}: could not prune its message store: ${errorMessage(e)}`),
  );
  const stopping = new AbortController();
  const shared = sharedLedger(ctx, name);
  const lock = o.lock;
  const fence: SendFence | undefined =
    lock?.hold && lock.check && lock.stale
      ? { hold: () => lock.hold!(), check: (h) => lock.check!(h), stale: (h, why) => lock.stale!(h, why) }
      : undefined;
  const outbox = new Outbox({
    ledger: new DeliveryLedger(store, shared),
    limiter: new RateLimiter(o.policy),
    classify: o.classify,
    log: ctx.log,
    signal: stopping.signal,
    ...(fence ? { fence } : {}),
  });
  // Status messages are recorded in the store: the next start ends the ones a killed process left (`resume`).
  const progress = new ProgressFeedback({
    log: ctx.log,
    store,
    transport: o.transport(outbox),
    ...(o.refreshMs ? { refreshMs: o.refreshMs } : {}),
  });
  const typing = o.typing !== false;
  const feedbackOn = () => setting<boolean>(ctx, 'progressFeedbackEnabled', true) !== false;
  const typingOnly = () => setting<boolean>(ctx, 'progressFeedbackTypingOnly', false) === true;

  const nothing = () =>
    pluginError(PluginErrorCodes.INVALID_ARGUMENT, 'Nothing to send: the message has no text and no files.', { plugin: ctx.id });
  const send = async (to: string, message: string | OutboundMessage, options: ChunkOptions = {}): Promise<SentMessage> => {
    const bad = o.badAddress(to);
    if (bad) throw pluginError(PluginErrorCodes.INVALID_ARGUMENT, bad, { plugin: ctx.id });
    const given: OutboundMessage = typeof message === 'string' ? { text: message } : message;
    if (!given.text && !given.files?.length) throw nothing();
    // A tap may rewrite the text (redact a secret): what it returns is what is sent.
    const m = await outgoing(ctx, name, to, given);
    const key = options.idempotencyKey ?? DeliveryLedger.freshKey();
    const chunks = o.chunks(m, options, key);
    if (!chunks.length) throw nothing();
    const ids = await outbox.deliver(key, to, chunks, o.sendChunk);
    return { messageId: ids[0]!, messageIds: ids };
  };

  const replyCounters = new Map<string, number>();
  const reply = (action: Action, message: string | OutboundMessage) => {
    const t = o.target(action);
    const n = replyCounters.get(action.id) ?? 0;
    replyCounters.set(action.id, n + 1);
    return send(t.chatId, message, { ...t.options, ...(t.via !== undefined ? { via: t.via } : {}), idempotencyKey: `${action.id}:r${n}` });
  };

  const showProgress = (action: Action, update: ProgressUpdate) => {
    // Stopping (a restart): the kernel removes this channel's taps and capabilities only after stop() returns, and
    // a typing timer started meanwhile would go on through the old client for up to its ceiling.
    if (stopping.signal.aborted || !feedbackOn()) return;
    const only = update.typingOnly || typingOnly() || o.statusMessages === false;
    // Without a typing indicator, a typing-only update has nothing to show.
    if (only && !typing) return;
    const t = o.target(action);
    progress.update(action.id, t.progressKey ?? t.chatId, { ...update, typingOnly: only });
  };

  if (typing)
    ctx.hooks.tap('actionStarted', (action: Action) => {
      if (action.source !== name || stopping.signal.aborted || !feedbackOn()) return;
      try {
        const t = o.target(action);
        progress.update(action.id, t.progressKey ?? t.chatId, { typingOnly: true });
      } catch {
        // no chat to show it in
      }
    });
  ctx.hooks.tap('actionSettled', async (action: Action, outcome: { status: string; detail?: string }) => {
    if (action.source !== name) return;
    replyCounters.delete(action.id);
    // Typing stops now (synchronously); the status message is removed once its pending edit is through.
    void progress.stop(action.id);
    if (outcome.status !== 'failed') return;
    const why = outcome.detail ?? action.error ?? '';
    // The operator stopped it (dashboard, API, `keel cancel`): the person waiting is told, in those words.
    const byOperator = /^cancelled by the operator\b/.test(why);
    // A cancel asked for in the chat and answered already (/cancel, /reset, an edit, a deletion): nothing on top.
    if (!byOperator && /cancel|chat reset/i.test(why)) return;
    try {
      const t = o.target(action);
      const sent = await send(t.chatId, byOperator ? 'The operator stopped this request.' : failureNotice(why, o.failureLead), {
        ...t.options,
        ...(t.via !== undefined ? { via: t.via } : {}),
        format: 'plain',
        idempotencyKey: `${action.id}:failed`,
      });
      ctx.emit('messageDelivered', {
        channel: name,
        actionId: action.id,
        to: t.chatId,
        messageId: sent.messageId,
        messageIds: sent.messageIds,
      });
    } catch (e) {
      ctx.log.warn(`Could not tell ${name} about the failure of ${action.id}: ${errorMessage(e)}`);
    }
  });

  const autoReply = () => setting<boolean>(ctx, `${name}AutoReplyEnabled`, false) === true;
  // Input handed to running actions: what a killed process left on record becomes new messages now.
  const handed = new HandedInputs(store, ctx.log, (m) => receive(ctx, m, { autoReply: autoReply() }));
  ctx.hooks.tap('actionSettled', (action: Action, outcome: { status: string }) => handed.settled(action.id, outcome.status));
  const left = handed.recover();
  if (left) ctx.log.info(`${name}: ${left} input(s) handed to actions that were interrupted become new messages.`);

  const runtime: ChannelRuntime = {
    store,
    outbox,
    progress,
    handed,
    signal: stopping.signal,
    send,
    reply,
    showProgress,
    resume() {
      void outbox.resumeAll(o.sendChunk);
      void progress.recover();
    },
    async handle(inbound, h) {
      if (isBuiltin(inbound.command)) {
        // The answer reads the queue: what the chat said before the command is in it.
        await h.turn?.previous;
        const text = await runCommand(ctx, inbound, h.menu ?? BUILTIN_COMMANDS, h.statusLine);
        await (h.answer
          ? h.answer(text)
          : send(inbound.chatId, text, {
              idempotencyKey: `cmd:${inbound.messageId}`,
              ...(inbound.threadId ? { threadId: inbound.threadId } : {}),
              ...(inbound.replyTo?.messageId != null ? { replyToMessageId: String(inbound.replyTo.messageId) } : {}),
            }));
        return `command:${inbound.command}`;
      }
      const out = await receive(ctx, inbound, {
        autoReply: autoReply(),
        ...(h.turn ? { onOrdered: h.turn.ordered } : {}),
      });
      return out.kind === 'ignored' ? `ignored:${out.reason}` : out.kind;
    },
    async edited(e, h) {
      // After the chat's earlier messages are in the queue: the edit looks for the action one of them made.
      await h.turn?.previous;
      return routeEdit(ctx, handed, e, {
        deliver: (m) => runtime.handle(m, h),
        amend: (id, m) => receiveInto(ctx, id, m, { autoReply: autoReply() }),
      });
    },
    deleted(messageId) {
      return routeDelete(ctx, name, messageId);
    },
    capability(c) {
      return {
        name,
        status: c.status,
        send,
        reply: c.reply ?? reply,
        async progress(action, update) {
          showProgress(action, update);
        },
        ...(c.react ? { react: c.react } : {}),
      };
    },
    health(status) {
      return () => {
        const s = status();
        return s.state === 'failed' ? { ok: false, message: s.lastError ?? 'failed' } : { ok: true, message: `${name} ${s.state}` };
      };
    },
    async stop(connection, ingress) {
      stopPruning();
      stopping.abort(new Error('stopping'));
      await connection();
      await progress.stopAll();
      await ingress?.close();
      // An input the stopping action did not read is becoming a new message: let that finish while the store is open.
      await handed.drain();
      store.close();
      await shared?.close();
    },
  };
  return runtime;
}
