/**
 * What the loopback Discord (discord-server.ts) records and offers to tests.
 */
export interface DcCall {
  method: string;
  /** Path after /api/v10, without the query. */
  path: string;
  /** `METHOD /route` with ids replaced by `:id` (for failNext and callsOf). */
  route: string;
  query: URLSearchParams;
  body: any;
  files: Array<{ name: string; size: number }>;
  auth: string | undefined;
}

export interface DcMessage {
  id: string;
  channel_id: string;
  guild_id?: string;
  content: string;
  /** On a message in a thread: its approximate place there. */
  position?: number;
  author: { id: string; username: string; bot?: boolean; global_name?: string | null; discriminator: string; avatar: null };
  nonce?: string;
  message_reference?: { type?: number; message_id: string; channel_id?: string };
  /** A forward's message (without its author, as Discord sends it). */
  message_snapshots?: Array<{ message: Record<string, unknown> }>;
  attachments: Array<{ id: string; filename: string; size: number }>;
  mentions: Array<{ id: string; username: string; discriminator: string; avatar: null }>;
  timestamp: string;
  type: number;
  [k: string]: unknown;
}

/** A scripted failure. `afterCreate`: the message is created first and only the answer fails (a lost response). */
export interface FailSpec {
  status: number;
  message?: string;
  code?: number;
  retryAfter?: number;
  afterCreate?: boolean;
}

export interface FakeDiscord {
  /** REST base for discord.js `rest.api` (and chatCApiUrl). */
  apiUrl: string;
  token: string;
  bot: { id: string; username: string };
  applicationId: string;
  guildId: string;
  /** A text channel of the guild. */
  channelId: string;
  calls: DcCall[];
  /** Every message created by the bot (one per accepted POST; a nonce replay creates none), in order. */
  sent: DcMessage[];
  /** Application commands as last registered. */
  commands: Array<{ name: string; description: string }>;
  /** Interaction callbacks: interaction id → body (the first one; a second is refused with 40060, as Discord does). */
  interactionReplies: Map<string, any>;
  /** Edits of an interaction's original response (`PATCH /webhooks/:app/:token/messages/@original`): id → last body. */
  interactionEdits: Map<string, any>;
  /** Interaction callbacks, edits and follow-ups in the order they arrived. */
  interactionLog: Array<{ id: string; kind: 'callback' | 'edit' | 'followup'; type?: number; content?: string }>;
  /** Follow-up messages of interactions (`POST /webhooks/:app/:token`); `flags` 64: ephemeral. */
  interactionFollowups: Array<{ id: string; content: string; flags: number }>;
  /** While set, attachment downloads from the CDN wait for it (a slow download ahead in the channel). */
  cdnGate: Promise<void> | undefined;
  /**
   * History reads (`GET /channels/:id/messages`) of a channel named here wait for its promise, and so do listings of
   * its archived threads (`GET /channels/:id/threads/archived/public`).
   */
  historyGates: Map<string, Promise<void>>;
  /**
   * Archives a thread (as Discord does after its auto-archive time of inactivity): it leaves GUILD_CREATE's active
   * threads and is listed by `GET /channels/<parent>/threads/archived/public`; `at` is its archive time (default now).
   * A message posted in it (pushMessage, or the bot's) unarchives it.
   */
  archiveThread(threadId: string, at?: number): void;
  /**
   * Guild channels whose history the bot may not read: GUILD_CREATE shows them with an overwrite denying
   * READ_MESSAGE_HISTORY, and a history read answers 403 Missing Access (50001).
   */
  noHistoryAccess: Set<string>;
  /** Paths of CDN requests, in order. */
  cdnRequests: string[];
  /** Gateway connections opened, IDENTIFYs and RESUMEs received. */
  gateway: { connections: number; identifies: number; resumes: number; resumed: number; heartbeats: number };
  /** A user's message in the guild channel (or a DM when `dm`); dispatched as MESSAGE_CREATE. */
  pushMessage(
    content: string,
    o?: {
      userId?: string;
      channelId?: string;
      dm?: boolean;
      mention?: boolean;
      /** The message mentions a role instead (`<@&id>`): the bot's managed role, or another role of the server. */
      mentionRole?: 'bot' | 'other';
      /** A reply (type 19) to this message of the same channel, anyone's: Discord includes it as `referenced_message`. */
      replyTo?: string;
      /** The author's nickname in the server (`member.nick`). */
      nick?: string;
      /** A forward of a message (Discord's `message_snapshots`; the message's own content is the comment, often ''). */
      forward?: { content: string; at?: number };
      /** `missing`: the CDN answers 404 for it (expired or deleted). */
      attachment?: { filename: string; data: Buffer; contentType?: string; missing?: boolean };
      /** When it was written (epoch ms, for its snowflake): default now. */
      at?: number;
      /** Only in the history: no MESSAGE_CREATE is dispatched (an event the gateway lost). */
      historyOnly?: boolean;
      /** `channelId` is a public thread (type 11) of this parent channel, created with this message if new. */
      threadOf?: string;
    },
  ): DcMessage;
  /**
   * The author edits a message pushed earlier: its content (with the bot's mention when `mention`) and
   * `edited_timestamp` change, and the whole message is dispatched as MESSAGE_UPDATE, as Discord does. `embedOnly`:
   * Discord's own update when it unfurls a link (embeds change; content and `edited_timestamp` do not).
   */
  editMessage(id: string, content: string, o?: { mention?: boolean; at?: number; embedOnly?: boolean }): DcMessage;
  /** A message is deleted: gone from the history, MESSAGE_DELETE dispatched (`id`, `channel_id`, `guild_id`). */
  deleteMessage(id: string): void;
  /** A slash command interaction (INTERACTION_CREATE). */
  pushCommand(name: string, o?: { userId?: string; channelId?: string }): { id: string; token: string };
  /**
   * A user taps a button (custom id `customId`) of `message`, one of the bot's: INTERACTION_CREATE type 3
   * (MESSAGE_COMPONENT) with the message; `member` in a server, `user` in a direct message, as Discord sends it. Its
   * callback (6 or 7) and the edit of `@original` change that message.
   */
  pushButton(message: DcMessage, customId: string, o?: { userId?: string }): { id: string; token: string };
  /** Dispatches an interaction again (as a replay after a resume would). */
  redeliverCommand(id: string): void;
  /** After `after` more successful calls of `route` (e.g. 'POST /channels/:id/messages'), the next `count` fail. */
  failNext(route: string, error: FailSpec, count?: number, after?: number): void;
  /** Closes the open gateway sockets abruptly (1006-like): the client should RESUME. */
  drop(): void;
  /** The open sockets stop sending anything and stop acknowledging heartbeats (a zombie connection). */
  silence(): void;
  /** While true, new gateway sockets get nothing at all (not even HELLO): a dead gateway. */
  deaf: boolean;
  /** While true, MESSAGE_CREATE is lost (not sent, not replayed) while heartbeats are acknowledged: a deaf session. */
  withholdMessages: boolean;
  /** Close code to answer the next IDENTIFYs with (4014: disallowed intents). */
  identifyCloseCode: number | undefined;
  /**
   * Called with every REST call before it is handled; 'hold' leaves it unanswered (never accepted);
   * 'accept-and-hold' creates the message but never answers (the answer is lost: Discord has it, the client not).
   */
  onCall?: ((call: DcCall) => 'hold' | 'accept-and-hold' | void) | undefined;
  heartbeatMs: number;
  callsOf(route: string): DcCall[];
  /** Messages the bot created in a channel. */
  sentTo(channelId: string): DcMessage[];
  close(): Promise<void>;
}
