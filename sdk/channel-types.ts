/**
 * The channel types: what a chat channel plugin offers (`channel:<name>`), what it sends, and the inbound message
 * it hands to `receive` (sdk/channel.ts). Types only, importing nothing but sdk/types.ts, so the capability map
 * (sdk/capabilities.ts) and the hooks (sdk/hooks.ts) can name them without importing the channel runtime.
 * Plugins import them through sdk/index.ts or sdk/channel.ts. Prose: docs/channels.md.
 */
import type { Action, Json } from './types.js';

/** Connection status of a channel (SPEC "Connection status"). */
export interface ConnectionStatus {
  enabled: boolean;
  connected: boolean;
  botUsername?: string;
  botId?: number;
  guilds?: number;
}

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
  /** A channel that catches up from the platform's history: ISO time the last catch-up ended. */
  lastCatchUpAt?: string;
  /** A channel that catches up from the platform's history: messages it recorded that the connection had not brought. */
  caughtUp?: number;
  /** A linked-device channel (chatB): whether a session is linked to an account. */
  linked?: boolean;
  /** A linked-device channel: the account's id (chatB: its phone-number JID), once connected. */
  account?: string;
  /** A linked-device channel: a QR code is shown in Keel's terminal and waits to be scanned. */
  waitingForScan?: boolean;
  /** A linked-device channel linking by phone number: the code to enter on that phone (`ABCD-EFGH`). */
  pairingCode?: string;
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
  /**
   * A native reaction to a message (`messageId` as the platform names it: a Slack ts, a snowflake), for the `react`
   * skill. `native: false` when the platform has no reaction for this emoji (the skill then replies with it).
   * Optional: channels without it get the emoji as a reply.
   * @example await channel.react?.('C0GENERAL1', '1700000000.000100', '\u{1F44D}') // { native: true, reaction: 'thumbsup' }
   */
  react?(chatId: string, messageId: string, emoji: string): Promise<{ native: boolean; reaction?: string }>;
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
 * An earlier message the inbound one points at: the message it replies to (Discord, Telegram), or the first message
 * of the thread it was written in (Slack). The agent sees it quoted before the task. Unless its author is an admin
 * of the channel or the bot itself, it is marked untrusted there, and the action runs untrusted: a privileged
 * skill is then refused, as after reading a web page (DESIGN section 8; docs/channels.md, "Quoted messages").
 * @example const q: QuotedMessage = { userId: '42', userName: 'bob', text: 'the build fails on arm64' };
 */
export interface QuotedMessage {
  /** The author's platform id; '' when unknown (then untrusted). */
  userId: string;
  userName?: string;
  /** The bot itself wrote it (the channel compared the author with its own id). */
  fromBot?: boolean;
  /** The message's text as a person reads it (files named, not fetched). */
  text: string;
  /** When it was written (ISO), when the platform says. */
  at?: string;
  /** Forwarded by the sender rather than replied to (their message has only this, or this and a comment). */
  forwarded?: boolean;
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
  /** The message this one replies to (see QuotedMessage): kept as `metadata.quoted` with the author's trust. */
  quoted?: QuotedMessage;
  /**
   * Set by the channel kit when this is an edit of an earlier message (docs/channels.md, "Edits and deletions"):
   * `of` the message's own id, `at` the platform's edit time, `after` the action that already answered (or still
   * runs) the earlier version. Kept as `metadata.edit` (also on a waiting action amended in place).
   */
  edit?: { of: string; at: string; after?: string };
  /** True when the content itself cannot be trusted whatever the sender (e.g. mail whose From is unproven). */
  forceUntrusted?: boolean;
  /** When given, overrides the admin decision to "not admin" (e.g. email sender not authenticated). */
  notAdmin?: boolean;
  /** Anything else the platform told about the message (display name, language ...), for `messageIn` taps. */
  metadata?: Record<string, Json>;
  /**
   * Set by a `messageIn` tap to drop the message (`receive` then answers `dropped-by-hook`). Later taps still get
   * the message, so they never see anything but an InboundMessage; a tap should pass a dropped message on as is.
   */
  dropped?: boolean;
}
