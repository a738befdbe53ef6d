/**
 * A recorded Discord message or slash command (the raw gateway/REST JSON, as the ingress keeps it) → an
 * InboundMessage for `receive` or a built-in command. Runs once per message (the ingress dedupes by snowflake),
 * possibly again after a crash, so every step is repeatable: downloads overwrite, `receive` recognises an action
 * it already queued.
 */
import { saveInboundFiles } from '../../../sdk/channel-kit/index.js';
import type { InboundMessage, Logger, QuotedMessage } from '../../../sdk/index.js';

interface DcUser {
  id: string;
  /** On a mention in a server message: the person as a member there. */
  member?: { nick?: string | null };
  username?: string;
  global_name?: string | null;
  bot?: boolean;
}

/**
 * A Discord message's content as a person reads it: the bot's own mention (and its managed role's) dropped, another
 * person's mention `<@id>` as `@` and the name the server shows for them (from the message's `mentions`: nickname,
 * display name or handle), a custom emoji `<:name:id>` as `:name:`,
 * a timestamp `<t:1700000000:R>` as its UTC time. Role and channel mentions are left as they are; Discord does not
 * escape anything else.
 * @example discordPlainText('<@1> ask <@2> <:wave:3> by <t:0:R>', { botId: '1', mentions: [{ id: '2', username: 'bob' }] })
 * // 'ask @bob :wave: by 1970-01-01T00:00:00.000Z'
 */
export function discordPlainText(content: string, o: { botId?: string; selfRoleId?: string; mentions?: DcUser[] }): string {
  const names = new Map((o.mentions ?? []).map((u) => [u.id, shownName(u, u.member?.nick) ?? u.id]));
  return content
    .replace(
      /<@!?(\d+)>|<@&(\d+)>|<a?:(\w+):\d+>|<t:(-?\d+)(?::[tTdDfFR])?>/g,
      (all, user?: string, role?: string, emoji?: string, time?: string) => {
        if (user !== undefined) return user === o.botId ? '' : names.has(user) ? `@${names.get(user)}` : all;
        if (role !== undefined) return role === o.selfRoleId ? '' : all;
        if (emoji !== undefined) return `:${emoji}:`;
        const at = new Date(Number(time) * 1000);
        return Number.isNaN(at.getTime()) ? all : at.toISOString();
      },
    )
    .trim();
}

/**
 * The name Discord shows for a person: their nickname in the server, else their display name, else their handle.
 * @example shownName({ id: '1', username: 'bob_1', global_name: 'Bob' }, null) // 'Bob'
 */
export function shownName(u: DcUser, nick?: string | null): string | undefined {
  return [nick, u.global_name, u.username].find((x): x is string => typeof x === 'string' && x.trim() !== '');
}

/** What chatC reads of the message a reply answers. */
export interface DcReferencedMessage {
  id?: string;
  content?: string;
  author?: DcUser;
  mentions?: DcUser[];
  timestamp?: string;
  attachments?: Array<{ filename?: string }>;
  embeds?: Array<{ title?: string; description?: string }>;
}

/**
 * The message a reply answers, as the agent reads it quoted (its text as a person reads it, its files and embeds
 * named); undefined when there is nothing to quote (deleted, or empty).
 * @example quoteOf({ content: 'build fails', author: { id: '42', username: 'bob' } }, '1') // { userId: '42', userName: 'bob', text: 'build fails' }
 */
export function quoteOf(
  r: DcReferencedMessage | null | undefined,
  botId: string | undefined,
  selfRoleId?: string,
): QuotedMessage | undefined {
  if (!r?.author) return undefined;
  const text = [
    discordPlainText(r.content ?? '', {
      ...(botId !== undefined ? { botId } : {}),
      ...(selfRoleId !== undefined ? { selfRoleId } : {}),
      ...(r.mentions ? { mentions: r.mentions } : {}),
    }),
    ...(r.attachments ?? []).map((a) => `[file: ${a.filename ?? 'unnamed'}]`),
    ...(r.embeds ?? [])
      .map((e) => [e.title, e.description].filter(Boolean).join(': '))
      .filter(Boolean)
      .map((e) => `[embed: ${e}]`),
  ]
    .filter(Boolean)
    .join('\n');
  if (!text) return undefined;
  const fromBot = botId !== undefined && r.author.id === botId;
  return {
    userId: r.author.id,
    ...(shownName(r.author) ? { userName: shownName(r.author)! } : {}),
    ...(fromBot ? { fromBot: true } : {}),
    text,
    ...(r.timestamp ? { at: r.timestamp } : {}),
  };
}

/**
 * The message a forward carries (Discord's `message_snapshots`), quoted as forwarded. Discord gives no author, so the
 * quote has none, and is never trusted.
 */
export function forwardOf(
  m: Pick<DcInboundMessage, 'message_reference' | 'message_snapshots'>,
  botId: string | undefined,
  selfRoleId?: string,
): QuotedMessage | undefined {
  const snap = m.message_reference?.type === 1 ? m.message_snapshots?.[0]?.message : undefined;
  const q = snap ? quoteOf({ ...snap, author: { id: '' } }, botId, selfRoleId) : undefined;
  return q ? { ...q, forwarded: true } : undefined;
}

/** The parts of a Discord message object we use. */
export interface DcInboundMessage {
  id: string;
  channel_id: string;
  guild_id?: string;
  type?: number;
  content?: string;
  author: DcUser;
  webhook_id?: string;
  mentions?: DcUser[];
  /** Ids of the roles the message mentions (`<@&id>`). */
  mention_roles?: string[];
  /** The message this one replies to (type 19), as Discord includes it; null when it was deleted. */
  referenced_message?: DcReferencedMessage | null;
  /** `type` 1: a forward, whose message is in `message_snapshots` (without its author: Discord does not say). */
  message_reference?: { type?: number; message_id?: string; channel_id?: string };
  message_snapshots?: Array<{ message?: Omit<DcReferencedMessage, 'author' | 'id'> }>;
  timestamp?: string;
  /** When the author last edited it (ISO); null or absent when never. */
  edited_timestamp?: string | null;
  /** Set on a message in a thread (its approximate place there), absent elsewhere. */
  position?: number;
  /** The author as a member of the server (server messages only): their nickname there, if any. */
  member?: { nick?: string | null };
  attachments?: Array<{ id: string; filename: string; url?: string; content_type?: string; size?: number }>;
}

/** The parts of an interaction we use: an application command (type 2) or a tap on a button (type 3). */
export interface DcInteraction {
  id: string;
  token: string;
  application_id?: string;
  type: number;
  channel_id?: string;
  guild_id?: string;
  member?: { user: DcUser; nick?: string | null };
  user?: DcUser;
  /** `name`: the slash command's; `custom_id`: the tapped button's (type 3). */
  data?: { name?: string; custom_id?: string; component_type?: number };
  /** The bot's message whose button was tapped (type 3). */
  message?: { id: string; channel_id: string };
}

/** What the ingress keeps per entry. */
export type DcPayload =
  | { message: DcInboundMessage }
  | { interaction: DcInteraction }
  /** An edit (MESSAGE_UPDATE with a new `edited_timestamp`): the whole message as it reads now. */
  | { edit: DcInboundMessage }
  | { deleted: { id: string; channel_id: string } };

/** Default (0) and reply (19) are what people write; joins, pins, boosts and the like are not messages to answer. */
const USER_TYPES = new Set([0, 19]);

/** Whether a message is one to record: written by a person (not this bot, another bot or a webhook). */
export function isUserMessage(m: DcInboundMessage, botId: string | undefined): boolean {
  if (!m.author || m.author.bot || m.webhook_id || (botId && m.author.id === botId)) return false;
  return USER_TYPES.has(m.type ?? 0);
}

/** The inbound message of a Discord message (attachments downloaded under downloads/chatC/, at most 20 MB each). */
export async function messageToInbound(
  m: DcInboundMessage,
  d: {
    home: string;
    botId: string | undefined;
    /** The bot's managed role in the message's server: mentioning it is mentioning the bot. */
    selfRoleId?: string;
    log: Logger;
    autoReply: boolean;
    signal?: AbortSignal;
    /** Whether the bot takes part in the thread `channelId` (a message there counts as addressed to it). */
    follows?: (channelId: string) => boolean;
    /** The first message of thread `threadId` (thread-start.ts), quoted when the bot is mentioned in a thread. */
    threadStart?: (threadId: string) => Promise<DcReferencedMessage | undefined>;
  },
): Promise<InboundMessage> {
  const isGroup = m.guild_id !== undefined;
  const botId = d.botId;
  const mentioned = !isGroup || addressesBot(m, botId, d.selfRoleId) || (m.position !== undefined && d.follows?.(m.channel_id) === true);
  const text = discordPlainText(m.content ?? '', {
    ...(botId !== undefined ? { botId } : {}),
    ...(d.selfRoleId !== undefined ? { selfRoleId: d.selfRoleId } : {}),
    ...(m.mentions ? { mentions: m.mentions } : {}),
  });
  // A reply quotes what it answers; a mention in a thread (not its own first message) quotes the thread's start.
  const inThreadMention =
    !m.referenced_message && m.position !== undefined && m.id !== m.channel_id && addressesBot(m, botId, d.selfRoleId);
  const start = inThreadMention ? await d.threadStart?.(m.channel_id) : undefined;
  const quoted = quoteOf(m.referenced_message ?? start, botId, d.selfRoleId) ?? forwardOf(m, botId, d.selfRoleId);
  // Discord's CDN URLs are signed: no token goes with them. A file that cannot be saved becomes a note.
  // Attachments of a message the gating will ignore (auto-reply off, not addressed) are not fetched.
  const { attachments, notes } = await saveInboundFiles(
    (d.autoReply || mentioned ? (m.attachments ?? []) : []).map((a) => ({
      url: a.url,
      name: a.filename,
      mime: a.content_type,
      size: a.size,
    })),
    {
      home: d.home,
      channel: 'chatC',
      // An edit's files under names of their own: the files an earlier version's action reads are never rewritten.
      prefix: `${m.channel_id}_${m.id}${m.edited_timestamp ? `_e${Date.parse(m.edited_timestamp) || 0}` : ''}`,
      platform: 'Discord',
      log: d.log,
      ...(d.signal ? { signal: d.signal } : {}),
    },
  );
  return {
    channel: 'chatC',
    // Snowflakes are unique across Discord: the message id alone is the dedupe key and the reply target.
    messageId: m.id,
    chatId: m.channel_id,
    userId: m.author.id,
    ...(shownName(m.author, m.member?.nick) ? { userName: shownName(m.author, m.member?.nick)! } : {}),
    // A forward without a comment of the sender's is still a message to them: what it forwards is quoted.
    text: [text, ...notes].filter(Boolean).join('\n') || (quoted?.forwarded ? '[forwarded a message]' : ''),
    isGroup,
    mentioned,
    ...(attachments.length ? { attachments } : {}),
    ...(m.guild_id ? { replyTo: { guildId: m.guild_id } } : {}),
    ...(quoted ? { quoted } : {}),
  };
}

/**
 * Whether a server message addresses the bot: it mentions the bot, or the bot's managed role (Discord's "@" list
 * offers both under the same name; any other role the bot merely has, like "@everyone" or "@helpers", does not), or
 * it replies to one of the bot's messages.
 */
export function addressesBot(m: DcInboundMessage, botId: string | undefined, selfRoleId: string | undefined): boolean {
  if (selfRoleId !== undefined && (m.mention_roles ?? []).includes(selfRoleId)) return true;
  return botId !== undefined && ((m.mentions ?? []).some((u) => u.id === botId) || m.referenced_message?.author?.id === botId);
}

/** The inbound message of a slash command (always a command, so never gated by auto-reply). */
export function interactionToInbound(i: DcInteraction): InboundMessage | undefined {
  const user = i.member?.user ?? i.user;
  if (!user || !i.channel_id || !i.data?.name) return undefined;
  return {
    channel: 'chatC',
    messageId: `i:${i.id}`,
    chatId: i.channel_id,
    userId: user.id,
    ...(shownName(user, i.member?.nick) ? { userName: shownName(user, i.member?.nick)! } : {}),
    text: `/${i.data.name}`,
    isGroup: i.guild_id !== undefined,
    mentioned: true,
    command: i.data.name,
  };
}
