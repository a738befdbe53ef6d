/**
 * One gateway connection with discord.js, run under the kit's ConnectionSupervisor. discord.js itself resumes a
 * dropped socket (RESUME with session id and sequence at the `resume_gateway_url`) and tears down a socket whose
 * heartbeat went unacknowledged ("zombie connection") and resumes it; the supervisor's watchdog is the second line:
 * no dispatch and no heartbeat ACK for three heartbeat intervals (plus slack) aborts the whole client and builds a
 * new one. Close codes Discord will not take back (4004 bad token, 4014 disallowed intents) end the connection
 * with a GatewayClosedError the plugin turns into one clear final message.
 */
import { ChannelType, Client, Events, GatewayIntentBits, Options, Partials, PermissionFlagsBits } from 'discord.js';
import type { ConnectionHooks } from '../../../sdk/channel-kit/index.js';
import type { Logger } from '../../../sdk/index.js';
import { GatewayClosedError } from './discord.js';
import type { DcInboundMessage, DcInteraction } from './inbound.js';

/** A guild channel or active thread the session can see, as GUILD_CREATE described it. */
export interface SeenChannel {
  id: string;
  /** The newest message id Discord reports for it (may name a deleted message), if any. */
  lastMessageId?: string;
  /** Whether the bot may read its history (View Channel + Read Message History); undefined when not known. */
  readable?: boolean;
  /** A channel public threads are started in (text, announcement, forum, media): its archived threads can be listed. */
  threads?: boolean;
  /** A forum or media channel: no messages of its own, only threads (posts). */
  forum?: boolean;
}

export interface GatewayEvents {
  /**
   * READY of a new session (not a resume): the bot, its application, and the guild text channels and active
   * threads it can see (for the catch-up of channels it never heard from).
   */
  ready(info: { botId: string; username: string; applicationId: string | undefined; channels: SeenChannel[] }): Promise<void> | void;
  message(m: DcInboundMessage): void;
  /** MESSAGE_UPDATE: the whole message as it reads now (an edit when `edited_timestamp` moved; an unfurl otherwise). */
  edit(m: DcInboundMessage): void;
  /** MESSAGE_DELETE. */
  deleted(d: { id: string; channel_id: string }): void;
  interaction(i: DcInteraction): void;
  /**
   * The servers the bot is in (at READY and whenever one is joined or left): how many, and the bot's own managed
   * role in each (the role Discord creates for a bot, which people mention by picking "@<bot name>" in the list).
   */
  guilds(count: number, selfRoles: Map<string, string>): void;
}

/** What the plugin learns about the live connection. */
export interface GatewayInfo {
  /** HELLO's heartbeat interval, once known. */
  heartbeatMs?: number;
}

export function gatewayConnector(o: { token: string; apiUrl: string; log: Logger; on: GatewayEvents; info: GatewayInfo }) {
  return async (signal: AbortSignal, hooks: ConnectionHooks): Promise<void> => {
    const client = new Client({
      rest: { api: o.apiUrl.replace(/\/+$/, '') },
      intents: [
        GatewayIntentBits.Guilds,
        GatewayIntentBits.GuildMessages,
        GatewayIntentBits.MessageContent,
        GatewayIntentBits.DirectMessages,
      ],
      // DM channels are not cached before their first message; without this discord.js would drop it.
      partials: [Partials.Channel],
      // Messages are taken from the raw dispatch and kept in the ingress: discord.js need not cache them.
      makeCache: Options.cacheWithLimits({ ...Options.DefaultMakeCacheSettings, MessageManager: 0 }),
    });
    let closed: (e: Error) => void = () => undefined;
    const ended = new Promise<never>((_, reject) => {
      closed = reject;
    });
    ended.catch(() => undefined);
    client.on(Events.Debug, (m) => {
      const hb = /starting to beat every (\d+)ms/.exec(m);
      if (hb) o.info.heartbeatMs = Number(hb[1]);
    });
    client.on(Events.Raw, (p: { t?: string; d?: unknown }) => {
      hooks.live();
      if (p.t === 'MESSAGE_CREATE') o.on.message(p.d as DcInboundMessage);
      else if (p.t === 'MESSAGE_UPDATE') o.on.edit(p.d as DcInboundMessage);
      else if (p.t === 'MESSAGE_DELETE') o.on.deleted(p.d as { id: string; channel_id: string });
      // Slash commands (2) and taps on the bot's buttons (3, MESSAGE_COMPONENT).
      else if (p.t === 'INTERACTION_CREATE' && [2, 3].includes((p.d as DcInteraction).type)) o.on.interaction(p.d as DcInteraction);
    });
    const guilds = () => {
      const selfRoles = new Map<string, string>();
      for (const g of client.guilds.cache.values()) {
        const role = client.user ? g.roles.botRoleFor(client.user) : null;
        if (role) selfRoles.set(g.id, role.id);
      }
      o.on.guilds(client.guilds.cache.size, selfRoles);
    };
    client.on(Events.GuildCreate, guilds);
    client.on(Events.GuildDelete, guilds);
    client.on(Events.ShardResume, () => {
      hooks.connected();
      o.log.info('chatC: gateway session resumed.');
    });
    client.on(Events.ShardReconnecting, () => o.log.debug('chatC: gateway reconnecting.'));
    // Only close codes discord.js will not recover from reach here (4004, 4010-4014).
    client.on(Events.ShardDisconnect, (ev) => closed(new GatewayClosedError(ev.code)));
    client.on(Events.ShardError, (e) => o.log.debug(`chatC: gateway error: ${e.message}`));
    client.on(Events.Error, (e) => o.log.warn(`chatC: ${e.message}`));
    const ready = new Promise<void>((resolve) => client.once(Events.ClientReady, () => resolve()));
    signal.addEventListener('abort', () => closed(signal.reason instanceof Error ? signal.reason : new Error('aborted')), { once: true });
    // Heartbeat ACKs are signs of life too (a quiet server sends no dispatches for hours).
    let lastPing = -1;
    const pings = setInterval(() => {
      const shard = client.ws.shards.first();
      if (shard && shard.lastPingTimestamp !== lastPing && shard.lastPingTimestamp > 0) {
        lastPing = shard.lastPingTimestamp;
        hooks.live();
      }
    }, 250);
    try {
      await Promise.race([client.login(o.token), ended]);
      await Promise.race([ready, ended]);
      guilds();
      await o.on.ready({
        botId: client.user!.id,
        username: client.user!.username,
        applicationId: client.application?.id,
        channels: seenChannels(client),
      });
      hooks.connected(`as ${client.user!.username} (Discord user ${client.user!.id}) in ${client.guilds.cache.size} server(s)`);
      await ended;
    } finally {
      clearInterval(pings);
      client.removeAllListeners();
      await teardown(client);
    }
  };
}

/** The guild text channels and active threads in the client's cache (all guilds' GUILD_CREATE are in by READY). */
function seenChannels(client: Client): SeenChannel[] {
  const out: SeenChannel[] = [];
  for (const c of client.channels.cache.values()) {
    if (c.isDMBased()) continue;
    const forum = c.type === ChannelType.GuildForum || c.type === ChannelType.GuildMedia;
    if (!c.isTextBased() && !forum) continue;
    const perms = client.user ? c.permissionsFor(client.user) : null;
    const last = 'lastMessageId' in c ? c.lastMessageId : undefined;
    out.push({
      id: c.id,
      ...(last ? { lastMessageId: last } : {}),
      ...(perms ? { readable: perms.has([PermissionFlagsBits.ViewChannel, PermissionFlagsBits.ReadMessageHistory]) } : {}),
      ...(forum || c.type === ChannelType.GuildText || c.type === ChannelType.GuildAnnouncement ? { threads: true } : {}),
      ...(forum ? { forum: true } : {}),
    });
  }
  return out;
}

type Socket = { terminate?: () => void; on?: (event: 'error', fn: () => void) => unknown };
type ShardInternals = { internalConnect?: () => Promise<void>; connection?: Socket | null };

/**
 * An error of a socket being torn down goes nowhere: @discordjs/ws's destroy sets `onerror = null`, and a socket
 * still connecting then emits 'error' ("closed before the connection was established") with no listener, which
 * would end the whole process. A listener added with `on` survives that.
 */
const quiet = new WeakSet<object>();
function silence(socket: Socket | null | undefined): void {
  if (!socket || quiet.has(socket) || typeof socket.on !== 'function') return;
  quiet.add(socket);
  socket.on('error', () => undefined);
}

/**
 * Destroys the client for good. @discordjs/ws 1.x has a race: destroying a shard while it waits for HELLO (a dead
 * gateway) makes its own wait fail, which starts a second destroy *with* reconnect; the first never settles and the
 * shard dials again on its own — a leaked connection that would later IDENTIFY beside the new client. So the
 * shards are kept from reconnecting first, the destroy gets a bounded time, and any socket left is cut.
 */
async function teardown(client: Client): Promise<void> {
  const strategy = (client.ws as unknown as { _ws?: { strategy?: { shards?: Map<number, ShardInternals> } } })._ws?.strategy;
  const shards = [...(strategy?.shards?.values() ?? [])];
  for (const s of shards) if (typeof s.internalConnect === 'function') s.internalConnect = async () => undefined;
  const sockets = shards.map((s) => s.connection);
  sockets.forEach(silence);
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([client.destroy().catch(() => undefined), new Promise<void>((r) => (timer = setTimeout(r, 3000)))]);
  clearTimeout(timer);
  for (const s of shards) silence(s.connection);
  for (const socket of new Set([...sockets, ...shards.map((s) => s.connection)])) socket?.terminate?.();
}
