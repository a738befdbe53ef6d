/**
 * The channel contract: what a chat channel plugin offers (`channel:<name>`) and the one way an inbound platform
 * message becomes an action (`receive`). Every channel, built in or a user's own, uses exactly this, so the agent,
 * the gateway, doctor and `keel status` treat them all alike. Prose: docs/channels.md.
 */
import type { ConnectionStatus, PluginContext, PolicyCapability } from './plugin.js';
import type { Action, Actor, Json } from './types.js';

/**
 * What `status()` of a channel reports: SPEC's connection status plus documented extras.
 * @example const s: ChannelStatus = { enabled: true, connected: true, state: 'connected', reconnects: 0 };
 */
export interface ChannelStatus extends ConnectionStatus {
  state?: 'connecting' | 'connected' | 'reconnecting' | 'stopped' | 'failed';
  /** ISO time of the last message received from the platform. */
  lastInboundAt?: string;
  /** Reconnections since start. */
  reconnects?: number;
  /** The last connection error, in words (never a secret). */
  lastError?: string;
}

/**
 * A file to send with a message.
 * @example const f: OutboundFile = { path: '/tmp/report.pdf', caption: 'Report', kind: 'document' };
 */
export interface OutboundFile {
  path: string;
  caption?: string;
  kind?: 'document' | 'photo' | 'audio' | 'voice';
}

/**
 * A message to send: Markdown text (the channel renders it for its platform), files, buttons.
 * @example const m: OutboundMessage = { text: '**Done**', buttons: [[{ text: 'Again', callback_data: 'again' }]] };
 */
export interface OutboundMessage {
  /** Markdown: the agent writes Markdown; the channel renders it. */
  text?: string;
  files?: OutboundFile[];
  buttons?: Array<Array<{ text: string; callback_data?: string; url?: string }>>;
}

/**
 * How to send.
 * @example await chan.send('42', 'hi', { replyToMessageId: '7', idempotencyKey: `${action.id}:0` });
 */
export interface SendOptions {
  replyToMessageId?: string;
  threadId?: string;
  silent?: boolean;
  format?: 'markdown' | 'plain';
  /** Ledger key: the same key is never delivered twice (the kit derives one from action id + reply index). */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

/**
 * Platform ids of what was sent: the first message and every chunk.
 * @example const { messageId } = await chan.send('42', 'hi');
 */
export interface SentMessage {
  messageId: string;
  messageIds: string[];
}

/**
 * Progress of a running action, for typing indicators or a status message edited in place.
 * @example await chan.progress?.(action, { typingOnly: false, thought: 'Searching the web', step: 2 });
 */
export interface ProgressUpdate {
  typingOnly: boolean;
  thought?: string;
  step?: number;
}

/**
 * Capability `channel:<name>` (`channel:chatA`, `channel:echo`, ...): one running chat channel.
 * @example
 * ctx.provide('channel:echo', {
 *   name: 'echo',
 *   status: () => ({ enabled: true, connected: true }),
 *   send: async (to, m) => ({ messageId: '1', messageIds: ['1'] }),
 *   reply: async (action, m) => ({ messageId: '2', messageIds: ['2'] }),
 * } satisfies ChannelCapability);
 */
export interface ChannelCapability {
  name: string;
  status(): ChannelStatus;
  send(to: string, message: string | OutboundMessage, options?: SendOptions): Promise<SentMessage>;
  /** Answer the action on the chat it came from (action.source + action.metadata.replyTo). */
  reply(action: Action, message: string | OutboundMessage): Promise<SentMessage>;
  /** Typing / progress feedback while the action runs; the channel stops it when the action settles. */
  progress?(action: Action, update: ProgressUpdate): Promise<void>;
}

/**
 * What a channel manifest declares in its `channel` field: the name and the form of its user ids, used to
 * validate `adminUsers.<name>` entries.
 * @example channel: { name: 'chatA', userIdPattern: '^-?\\d+$', userIdExample: '123456789' }
 */
export interface ChannelManifestInfo {
  name: string;
  /** RegExp source, anchored (`^...$`). */
  userIdPattern: string;
  userIdExample: string;
}

/**
 * One inbound platform message, as a channel hands it to `receive` (and as `messageIn` taps see it).
 * @example
 * const m: InboundMessage = { channel: 'echo', messageId: '17', chatId: 'room-1', userId: 'u1', text: 'hello' };
 */
export interface InboundMessage {
  /** Channel name, e.g. 'chatA'. */
  channel: string;
  /** Platform message id: the dedupe key is (channel, messageId). */
  messageId: string;
  /** Where replies go. */
  chatId: string;
  /** Platform user id (validated by userIdPattern for admin decisions). */
  userId: string;
  userName?: string;
  text: string;
  isGroup?: boolean;
  /** The bot was mentioned, or the message replies to the bot. */
  mentioned?: boolean;
  /** Slash command name without '/', when the message is one. */
  command?: string;
  threadId?: string;
  attachments?: Array<{ path: string; name?: string; mime?: string; kind?: string }>;
  /** Extra platform reply address fields (kept in action.metadata.replyTo). */
  replyTo?: Record<string, Json>;
  /** True when the content itself cannot be trusted whatever the sender (e.g. mail whose From is unproven). */
  forceUntrusted?: boolean;
  /** When given, overrides the admin decision to "not admin" (e.g. email sender not authenticated). */
  notAdmin?: boolean;
  /** Anything else the platform told about the message (display name, language ...), for `messageIn` taps. */
  metadata?: Record<string, Json>;
}

/**
 * How `receive` treats a message.
 * @example await receive(ctx, msg, { autoReply: ctx.config.get<boolean>('echoAutoReplyEnabled') });
 */
export interface ReceiveOptions {
  /** Answer every message; when false only commands and mentions (in groups and direct chats) become actions. */
  autoReply: boolean;
  /** Priority of the action (1..10, default 5). */
  priority?: number;
  /** Ignore messages from non-admins ('not-admin'), e.g. for a command only admins may give. */
  requireAdmin?: boolean;
  /**
   * The sender is the local operator, proven by the channel itself (the gateway chat: a client authenticated by the
   * gateway key, or on loopback of a gateway without one). The actor is then `{kind: 'operator', channel, userId}`:
   * admin and trusted, as the CLI is. `inbound.notAdmin` still wins.
   */
  operator?: boolean;
}

/**
 * What became of an inbound message.
 * - `queued`: an action was pushed.
 * - `handed`: given to a running action of the same session. Reserved: the kernel has no path yet to give
 *   input to a running action, so `receive` never returns it today (docs/channels.md).
 * - `ignored`: nothing was pushed, for the reason given.
 * @example const out = await receive(ctx, msg, { autoReply: true }); if (out.kind === 'queued') log(out.action.id);
 */
export type ReceiveOutcome =
  | { kind: 'queued'; action: Action }
  | { kind: 'handed'; actionId: string }
  | { kind: 'ignored'; reason: 'auto-reply-off' | 'not-admin' | 'duplicate' | 'dropped-by-hook' | 'rate-limited' | 'empty' };

/** Look-back for the queue-level duplicate check (the kit's durable ingress is the real dedupe). */
function alreadyQueued(ctx: PluginContext, channel: string, messageId: string): Action | undefined {
  const { pending, completed, failed } = ctx.queue.list();
  for (const a of [...pending, ...completed, ...failed]) {
    const inb = a.metadata.inbound as { channel?: unknown; messageId?: unknown } | undefined;
    if (inb && inb.channel === channel && inb.messageId === messageId) return a;
  }
  return undefined;
}

function decideAdmin(ctx: PluginContext, actor: Actor): boolean {
  try {
    const policy = ctx.use<PolicyCapability>('kernel:policy');
    // Fail closed: without the kernel's policy nobody on a channel is admin.
    return policy?.isAdmin(actor) === true;
  } catch {
    return false;
  }
}

function sessionOf(ctx: PluginContext, actor: Actor): string {
  try {
    const key = ctx.use<PolicyCapability>('kernel:policy')?.sessionKey(actor);
    if (typeof key === 'string' && key) return key;
  } catch {
    // fall through to the narrowest scope
  }
  return `${actor.channel}:${actor.userId ?? 'anonymous'}`;
}

function taskOf(m: InboundMessage): string {
  const files = (m.attachments ?? []).map((a) => `[attachment: ${a.name ?? a.path} (${a.kind ?? a.mime ?? 'file'}) at ${a.path}]`);
  return [m.text.trim(), ...files].filter(Boolean).join('\n');
}

/**
 * Turn one inbound platform message into an action: the one path every channel uses.
 *
 * Builds the actor `{ kind: 'user', channel, userId }` (admin decided by `kernel:policy` with identity links,
 * failing closed; `notAdmin` forces "no"), marks non-admin content untrusted (`actor.untrusted`), computes the
 * session key, runs the `messageIn` waterfall (a tap returning `null` drops the message), applies gating
 * (auto-reply off: only commands and mentions) and pushes the action with `source = channel`,
 * `metadata.replyTo = { chatId, messageId, threadId?, ...inbound.replyTo }`, `metadata.actor`,
 * `metadata.session` and `metadata.inbound = { channel, messageId, userId }`. A message whose
 * (channel, messageId) is already in the queue's history is `duplicate`.
 *
 * @example
 * const out = await receive(ctx, { channel: 'echo', messageId: '1', chatId: 'c1', userId: 'u1', text: 'hi' },
 *   { autoReply: true });
 */
export async function receive(ctx: PluginContext, inbound: InboundMessage, options: ReceiveOptions): Promise<ReceiveOutcome> {
  const operator = options.operator === true && inbound.notAdmin !== true;
  const admin = inbound.notAdmin === true ? false : operator || decideAdmin(ctx, { kind: 'user', channel: inbound.channel, userId: inbound.userId });
  const untrusted = !admin || inbound.forceUntrusted === true;
  const actor: Actor = { kind: operator ? 'operator' : 'user', channel: inbound.channel, userId: inbound.userId, ...(untrusted ? { untrusted: true } : {}) };
  if (options.requireAdmin && !admin) return { kind: 'ignored', reason: 'not-admin' };
  const session = sessionOf(ctx, actor);

  const rewritten = (await ctx.emit('messageIn', { ...inbound })) as InboundMessage | null | undefined;
  if (rewritten === null || typeof rewritten !== 'object' || typeof rewritten.text !== 'string') {
    return { kind: 'ignored', reason: 'dropped-by-hook' };
  }
  // Taps may rewrite the content, never who sent it or where it goes.
  const m: InboundMessage = { ...rewritten, channel: inbound.channel, userId: inbound.userId, chatId: inbound.chatId, messageId: inbound.messageId };
  const task = taskOf(m);
  if (!task) return { kind: 'ignored', reason: 'empty' };
  if (!options.autoReply && !m.command && m.mentioned !== true) return { kind: 'ignored', reason: 'auto-reply-off' };
  if (alreadyQueued(ctx, m.channel, m.messageId)) return { kind: 'ignored', reason: 'duplicate' };

  const replyTo: Record<string, Json> = {
    chatId: m.chatId,
    messageId: m.messageId,
    ...(m.threadId !== undefined ? { threadId: m.threadId } : {}),
    ...(inbound.replyTo ?? {}),
  };
  const metadata: Record<string, Json> = {
    replyTo,
    session,
    inbound: {
      channel: m.channel,
      messageId: m.messageId,
      userId: m.userId,
      ...(m.userName !== undefined ? { userName: m.userName } : {}),
      ...(m.isGroup !== undefined ? { isGroup: m.isGroup } : {}),
      ...(m.command !== undefined ? { command: m.command } : {}),
    },
    ...(m.attachments?.length ? { attachments: m.attachments.map((a) => ({ ...a })) as Json } : {}),
    ...(untrusted ? { untrusted: true } : {}),
  };
  const action = await ctx.queue.push({
    task,
    source: m.channel,
    actor,
    ...(options.priority !== undefined ? { priority: options.priority } : {}),
    metadata,
  });
  return { kind: 'queued', action };
}
