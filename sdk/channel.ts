/**
 * The channel contract: what a chat channel plugin offers (`channel:<name>`) and the one way an inbound platform
 * message becomes an action (`receive`). Every channel, built in or a user's own, uses exactly this, so the agent,
 * the gateway, doctor and `keel status` treat them all alike. The types live in sdk/channel-types.ts (re-exported
 * here), so the capability map and the hooks name them without importing this runtime. Prose: docs/channels.md.
 */
import { errorMessage, PluginErrorCodes, pluginError } from './errors.js';
import type {
  ChannelCapability,
  ChannelManifestInfo,
  ChannelStatus,
  InboundMessage,
  OutboundMessage,
  QuotedMessage,
} from './channel-types.js';
import type { PluginContext } from './plugin.js';
import type { Action, Actor, Json } from './types.js';

export type * from './channel-types.js';

/**
 * The user-id forms of SPEC's channels, in one place: a channel plugin of that name declares the same in its
 * manifest (`channel: SPEC_CHANNELS.chatA`), and `adminUsers.<name>` is validated against it even while the
 * plugin is not installed.
 * @example new RegExp(SPEC_CHANNELS.chatC.userIdPattern).test('123456789012345678') // true
 */
export const SPEC_CHANNELS = {
  chatA: { name: 'chatA', userIdPattern: '^-?\\d+$', userIdExample: '123456789' },
  chatB: {
    name: 'chatB',
    userIdPattern: '^\\d+(?::\\d+)?@(?:s\\.whatsapp\\.net|c\\.us|lid)$',
    userIdExample: '4915123456789@s.whatsapp.net',
  },
  chatC: { name: 'chatC', userIdPattern: '^\\d{17,20}$', userIdExample: '123456789012345678' },
  chatD: { name: 'chatD', userIdPattern: '^[UW][A-Z0-9]+$', userIdExample: 'U01ABCDEF23' },
  email: { name: 'email', userIdPattern: '^[^\\s@<>]+@[^\\s@<>]+\\.[^\\s@<>]+$', userIdExample: 'owner@example.com' },
} as const satisfies Record<string, ChannelManifestInfo>;

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
   * Refuse a (channel, messageId) this kernel already saw (default true): the queue's kept history is read
   * once, then the keys are remembered in memory (the newest 20,000). A channel whose durable ingress already
   * deduplicates (the channel kit's) may turn it off.
   */
  checkDuplicates?: boolean;
  /**
   * The sender is the local operator, proven by the channel itself (the gateway chat: a client authenticated by the
   * gateway key, or on loopback of a gateway without one). The actor is then `{kind: 'operator', channel, userId}`:
   * admin and trusted, as the CLI is. `inbound.notAdmin` still wins.
   */
  operator?: boolean;
  /**
   * Called once the action's queue push is issued (its place in the queue is fixed), before it is durable: the
   * channel kit's ingress then lets the chat's next message through (`IngressTurn.ordered`).
   */
  onOrdered?: () => void;
}

/**
 * What became of an inbound message.
 * - `queued`: an action was pushed.
 * - `handed`: given to a running action of the same session. Reserved: `receive` never returns it today; a
 *   channel hands input it can tie to an action (a button press) through `agent:inbox` itself (docs/channels.md).
 * - `ignored`: nothing was pushed, for the reason given.
 * @example const out = await receive(ctx, msg, { autoReply: true }); if (out.kind === 'queued') log(out.action.id);
 */
export type ReceiveOutcome =
  | { kind: 'queued'; action: Action }
  | { kind: 'handed'; actionId: string }
  | { kind: 'ignored'; reason: 'auto-reply-off' | 'not-admin' | 'duplicate' | 'dropped-by-hook' | 'rate-limited' | 'empty' };

/**
 * Why an inbound message or edit did not become an action, as `messageIgnored` reports it: `receive`'s reasons, and
 * for an edit (the channel kit's `edited`) `edit-too-old` (more than 15 minutes after the message) or
 * `edit-unchanged` (the text reads as the action already has it).
 */
export type IgnoredReason = Extract<ReceiveOutcome, { kind: 'ignored' }>['reason'] | 'edit-too-old' | 'edit-unchanged';

/** Inbound keys remembered per queue (one per kernel), newest last; bounded. */
const SEEN_LIMIT = 20_000;
const seenByQueue = new WeakMap<object, Map<string, true>>();
const inboundKey = (channel: string, messageId: string) => `${channel}\u0000${messageId}`;

/**
 * The inbound keys this kernel knows: seeded once from the queue (pending and the kept history, so a message
 * redelivered after a restart is still recognised while its action is kept), then kept up to date by `receive`.
 * The kit's durable ingress is the real dedupe; this is the second line.
 */
function seenKeys(ctx: PluginContext): Map<string, true> {
  let seen = seenByQueue.get(ctx.queue);
  if (!seen) {
    seen = new Map();
    const { pending, completed, failed } = ctx.queue.list();
    for (const a of [...failed, ...completed, ...pending]) {
      const inb = a.metadata.inbound as { channel?: unknown; messageId?: unknown } | undefined;
      if (inb && typeof inb.channel === 'string' && typeof inb.messageId === 'string')
        seen.set(inboundKey(inb.channel, inb.messageId), true);
    }
    seenByQueue.set(ctx.queue, seen);
  }
  return seen;
}

function remember(seen: Map<string, true>, key: string): void {
  seen.set(key, true);
  if (seen.size > SEEN_LIMIT) seen.delete(seen.keys().next().value as string);
}

/** The kernel's admin decision for an actor; without the policy, or when it fails, nobody is (fail closed). */
export function decideAdmin(ctx: Pick<PluginContext, 'use'>, actor: Actor): boolean {
  try {
    const policy = ctx.use('kernel:policy');
    // Fail closed: without the kernel's policy nobody on a channel is admin.
    return policy?.isAdmin(actor) === true;
  } catch {
    return false;
  }
}

function sessionOf(ctx: PluginContext, actor: Actor): string {
  try {
    const key = ctx.use('kernel:policy')?.sessionKey(actor);
    if (typeof key === 'string' && key) return key;
  } catch {
    // fall through to the narrowest scope
  }
  return `${actor.channel}:${actor.userId ?? 'anonymous'}`;
}

/** The most of a quoted message's text an action keeps; a longer one is cut, and says so. */
export const QUOTED_TEXT_CAP = 4000;

/**
 * `metadata.quoted` of an action: the text as the `messageIn` taps left it (a tap may redact it), the author and
 * the trust as the channel gave them (a tap never changes whose words they are). Trusted only when the bot wrote
 * it or its author is an admin of the channel, decided like the sender's (failing closed).
 */
function quotedOf(
  ctx: PluginContext,
  channel: string,
  given: QuotedMessage | undefined,
  shown: QuotedMessage | undefined,
): Record<string, Json> | undefined {
  if (!given || !shown || typeof shown.text !== 'string') return undefined;
  const full = shown.text.trim();
  if (!full) return undefined;
  const text =
    full.length > QUOTED_TEXT_CAP ? `${full.slice(0, QUOTED_TEXT_CAP)}... (${full.length - QUOTED_TEXT_CAP} more characters)` : full;
  const userId = typeof given.userId === 'string' ? given.userId : '';
  const fromBot = given.fromBot === true;
  const trusted = fromBot || (userId !== '' && decideAdmin(ctx, { kind: 'user', channel, userId }));
  return {
    userId,
    ...(typeof given.userName === 'string' && given.userName ? { userName: given.userName } : {}),
    ...(fromBot ? { fromBot: true } : {}),
    text,
    ...(typeof given.at === 'string' ? { at: given.at } : {}),
    ...(given.forwarded === true ? { forwarded: true } : {}),
    trusted,
  };
}

/** `metadata.edit` as the channel gave it (a tap never changes which message an edit is of). */
function editOf(e: NonNullable<InboundMessage['edit']>): Record<string, Json> {
  return {
    of: String(e.of),
    at: String(e.at),
    ...(typeof e.after === 'string' ? { after: e.after } : {}),
  };
}

/** The task an inbound message becomes: its text, then a line per attachment. */
export function taskOf(m: Pick<InboundMessage, 'text' | 'attachments'>): string {
  const files = (m.attachments ?? []).map((a) => `[attachment: ${a.name ?? a.path} (${a.kind ?? a.mime ?? 'file'}) at ${a.path}]`);
  return [m.text.trim(), ...files].filter(Boolean).join('\n');
}

/**
 * Turn one inbound platform message into an action: the one path every channel uses.
 *
 * Builds the actor `{ kind: 'user', channel, userId }` (admin decided by `kernel:policy` with identity links,
 * failing closed; `notAdmin` forces "no"), marks non-admin content untrusted (`actor.untrusted`), refuses a
 * (channel, messageId) this kernel already saw (`duplicate`: still in the queue's kept history, or received since
 * start, also when both deliveries arrive at once), computes the session key, runs the `messageIn` waterfall (a tap may set `dropped: true`), applies gating
 * (auto-reply off: only commands and mentions) and pushes the action with `source = channel`,
 * `metadata.replyTo = { chatId, messageId, threadId?, ...inbound.replyTo }`, `metadata.actor`,
 * `metadata.session`, `metadata.inbound = { channel, messageId, userId }` and, for a message that replies to
 * another, `metadata.quoted = { userId, userName?, fromBot?, text, at?, forwarded?, trusted }` (see QuotedMessage),
 * and for an edit of an earlier message `metadata.edit = { of, at, after? }`.
 *
 * @example
 * const out = await receive(ctx, { channel: 'echo', messageId: '1', chatId: 'c1', userId: 'u1', text: 'hi' },
 *   { autoReply: true });
 */
export async function receive(ctx: PluginContext, inbound: InboundMessage, options: ReceiveOptions): Promise<ReceiveOutcome> {
  const out = await decide(ctx, inbound, options);
  if (out.kind === 'ignored') reportIgnored(ctx, inbound, out.reason);
  return out;
}

/**
 * A setting of the plugin, or `fallback` when it is unset or not declared.
 * @example const token = setting(ctx, 'chatAToken', '');
 */
export function setting<T>(ctx: PluginContext, key: string, fallback: T): T {
  try {
    const v = ctx.config.get<T>(key);
    return v === undefined || v === null ? fallback : v;
  } catch {
    return fallback;
  }
}

/**
 * What a channel plugin offers while it is not configured: a stopped `channel:<name>` whose sends fail with
 * `reason` (which names the key to set), and its skills registered to fail with the same reason, so the agent and
 * the operator learn what to set instead of finding the skills missing. Nothing of the platform is loaded.
 * @example if (!token) return offerUnconfigured(ctx, 'chatC', 'chatC is not configured: set chatCToken.', ['send_chatC']);
 */
export function offerUnconfigured(ctx: PluginContext, name: string, reason: string, skills: readonly string[]): void {
  const fail = async (): Promise<never> => {
    throw pluginError(PluginErrorCodes.CHANNEL_NOT_CONNECTED, reason, { plugin: ctx.id });
  };
  const off: ChannelCapability = {
    name,
    status: () => ({ enabled: false, connected: false, state: 'stopped' }),
    send: fail,
    reply: fail,
  };
  ctx.provide(`channel:${name}`, off);
  for (const s of skills) ctx.skills.register(s, fail);
}

/**
 * Runs the `messageOut` waterfall for an outbound message, as every channel must before it sends: a tap may rewrite
 * the text (redact a secret) — the returned message carries what the taps left — or drop the message, which
 * throws. Channels on the kit's runtime get this from its `send`.
 * @example const m = await outgoing(ctx, 'email', to, message); const body = renderEmail(m.text ?? '');
 */
export async function outgoing(
  ctx: PluginContext,
  channel: string,
  to: string,
  message: string | OutboundMessage,
): Promise<OutboundMessage> {
  const m: OutboundMessage = typeof message === 'string' ? { text: message } : message;
  const out = await ctx.emit('messageOut', { channel, to, text: m.text ?? '' });
  if (out === null) throw pluginError(PluginErrorCodes.CHANNEL_SEND_FAILED, 'A messageOut hook dropped the message.', { plugin: ctx.id });
  return out && typeof out.text === 'string' && out.text !== (m.text ?? '') ? { ...m, text: out.text } : m;
}

/**
 * Tell the `messageIgnored` hook (action timelines) that an inbound message did not become an action. A channel
 * calls it itself for what never reaches `receive` (a redelivery its durable ingress recognised).
 * @example if (!fresh.includes(item)) reportIgnored(ctx, { channel: 'chatA', messageId: item.messageId, chatId: item.chatId }, 'duplicate');
 */
export function reportIgnored(
  ctx: Pick<PluginContext, 'emit'>,
  m: { channel: string; messageId: string; chatId?: string; userId?: string },
  reason: IgnoredReason,
): void {
  try {
    ctx.emit('messageIgnored', {
      channel: m.channel,
      messageId: m.messageId,
      ...(m.chatId !== undefined ? { chatId: m.chatId } : {}),
      ...(m.userId !== undefined ? { userId: m.userId } : {}),
      reason,
    });
  } catch {
    // A record of a non-event never changes what happened to the message.
  }
}

/** What `receive` decided before pushing: ignored, or the action to push (and how to forget its dedupe key). */
type Prepared =
  | Extract<ReceiveOutcome, { kind: 'ignored' }>
  | {
      kind: 'ready';
      input: { task: string; source: string; actor: Actor; priority?: number; metadata: Record<string, Json> };
      forget(): void;
    };

async function prepare(ctx: PluginContext, inbound: InboundMessage, options: ReceiveOptions): Promise<Prepared> {
  const operator = options.operator === true && inbound.notAdmin !== true;
  const admin =
    inbound.notAdmin === true ? false : operator || decideAdmin(ctx, { kind: 'user', channel: inbound.channel, userId: inbound.userId });
  const untrusted = !admin || inbound.forceUntrusted === true;
  const actor: Actor = {
    kind: operator ? 'operator' : 'user',
    channel: inbound.channel,
    userId: inbound.userId,
    ...(untrusted ? { untrusted: true } : {}),
  };
  if (options.requireAdmin && !admin) return { kind: 'ignored', reason: 'not-admin' };
  // Before messageIn, so a redelivered message has no side effects in the taps (contact counters ...). The key is
  // reserved at once: the same message delivered twice at the same moment is let through once.
  const key = inboundKey(inbound.channel, inbound.messageId);
  const seen = options.checkDuplicates === false ? undefined : seenKeys(ctx);
  if (seen?.has(key)) return { kind: 'ignored', reason: 'duplicate' };
  if (seen) remember(seen, key);
  // A queue shared by several machines: another machine may have queued this message already (the channel's
  // connection moved here, and its catch-up reads from an older cursor).
  if (seen && ctx.queue.knowsInbound && (await ctx.queue.knowsInbound(inbound.channel, inbound.messageId).catch(() => false)))
    return { kind: 'ignored', reason: 'duplicate' };
  const session = sessionOf(ctx, actor);

  const rewritten = (await ctx.emit('messageIn', { ...inbound })) as InboundMessage | null | undefined;
  // Anything but an InboundMessage back from the hook counts as a drop too: nothing half-formed is queued.
  if (rewritten === null || typeof rewritten !== 'object' || typeof rewritten.text !== 'string' || rewritten.dropped === true) {
    return { kind: 'ignored', reason: 'dropped-by-hook' };
  }
  // Taps may rewrite the content, never who sent it or where it goes.
  const m: InboundMessage = {
    ...rewritten,
    channel: inbound.channel,
    userId: inbound.userId,
    chatId: inbound.chatId,
    messageId: inbound.messageId,
    ...(inbound.threadId !== undefined ? { threadId: inbound.threadId } : {}),
  };
  const task = taskOf(m);
  if (!task) return { kind: 'ignored', reason: 'empty' };
  if (!options.autoReply && !m.command && m.mentioned !== true) return { kind: 'ignored', reason: 'auto-reply-off' };

  const quoted = quotedOf(ctx, m.channel, inbound.quoted, m.quoted);
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
    ...(quoted ? { quoted } : {}),
    ...(inbound.edit ? { edit: editOf(inbound.edit) } : {}),
    ...(untrusted ? { untrusted: true } : {}),
  };
  return {
    kind: 'ready',
    input: { task, source: m.channel, actor, ...(options.priority !== undefined ? { priority: options.priority } : {}), metadata },
    forget: () => seen?.delete(key),
  };
}

async function decide(ctx: PluginContext, inbound: InboundMessage, options: ReceiveOptions): Promise<ReceiveOutcome> {
  const p = await prepare(ctx, inbound, options);
  if (p.kind === 'ignored') return p;
  let action: Action;
  try {
    const pushing = ctx.queue.push(p.input);
    options.onOrdered?.();
    action = await pushing;
  } catch (e) {
    // Not queued: a later delivery of the same message must get its chance.
    p.forget();
    throw e;
  }
  return { kind: 'queued', action };
}

/**
 * The same decisions as `receive` (admin, dedupe, `messageIn` taps, gating), but instead of pushing a new action,
 * the waiting action `actionId` is amended in place to what the message would have queued (its task, and its
 * metadata merged), keeping its place in line: for an edited message whose action has not started (the channel
 * kit's `edited`). `started`: it is no longer waiting (nothing changed). An ignored outcome changes nothing either;
 * the caller decides what becomes of the waiting action then.
 * @example const out = await receiveInto(ctx, action.id, editedMessage, { autoReply: false });
 */
export async function receiveInto(
  ctx: PluginContext,
  actionId: string,
  inbound: InboundMessage,
  options: ReceiveOptions,
): Promise<Extract<ReceiveOutcome, { kind: 'ignored' }> | { kind: 'amended' } | { kind: 'started' }> {
  const p = await prepare(ctx, inbound, options);
  if (p.kind === 'ignored') {
    reportIgnored(ctx, inbound, p.reason);
    return p;
  }
  try {
    if (await ctx.queue.amend(actionId, { task: p.input.task, metadata: p.input.metadata })) return { kind: 'amended' };
  } catch (e) {
    p.forget();
    throw e;
  }
  p.forget();
  return { kind: 'started' };
}

/**
 * One running channel as `listChannels` reports it.
 * @example const c: ChannelListing = { name: 'echo', plugin: 'echo-channel', status: { enabled: true, connected: true } };
 */
export interface ChannelListing {
  /** Channel name (`chatA`, `echo`): the capability name without `channel:`. */
  name: string;
  /** Id of the plugin providing it. */
  plugin: string;
  /** Its status; absent when `status()` threw (then `error` says why). */
  status?: ChannelStatus;
  error?: string;
}

/**
 * Every running channel (each provider of a `channel:<name>` capability) with its status, in name order: what
 * the gateway's `GET /api/connections`, doctor and `keel status` list, so a user's own channel appears
 * wherever a built-in one does. A `status()` that throws is reported, never thrown.
 * @example for (const c of listChannels(ctx)) ctx.log.info(`${c.name}: ${c.status?.connected ? 'up' : 'down'}`);
 */
export function listChannels(source: Pick<PluginContext, 'capabilities'>): ChannelListing[] {
  return source.capabilities('channel:').map(({ name, plugin, impl }) => {
    const channel = name.slice('channel:'.length);
    try {
      return { name: channel, plugin, status: impl.status() };
    } catch (e) {
      return { name: channel, plugin, error: errorMessage(e) };
    }
  });
}
