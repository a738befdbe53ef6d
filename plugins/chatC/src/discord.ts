/**
 * The Discord side of sending: one ledgered chunk → one REST call (`POST /channels/:id/messages`) carrying a nonce
 * derived from the ledger key with `enforce_nonce`, so a chunk sent again after a crash or a lost response comes
 * back as the message Discord already created instead of a second one. Plus the error classification the kit's
 * limiter uses, and what counts as a credential error no retry fixes.
 */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { ActionRowBuilder, ButtonBuilder, ButtonStyle, DiscordAPIError, DiscordjsError, HTTPError, RateLimitError, REST } from 'discord.js';
import { parseApprovalButton } from '../../../sdk/index.js';
import type { Json, OutboundMessage } from '../../../sdk/index.js';
import type { SendErrorDecision } from '../../../sdk/channel-kit/index.js';

/** One ledger entry of an outbound Discord message (stored as JSON, so the nonce survives a crash). */
export type DcChunk =
  /** `components`: action rows of buttons (JSON as Discord takes it), on the last text chunk of a message with buttons. */
  | { kind: 'text'; content: string; nonce: string; replyTo?: string; components?: Json[] }
  | { kind: 'file'; path: string; caption?: string; nonce: string; replyTo?: string };

export const SNOWFLAKE = /^\d{17,20}$/;

/**
 * REST client for sends (independent of the gateway, so replies go out while the socket reconnects).
 * `globalRequestsPerSecond`: discord.js's own cap (default 50/s, Discord's global limit; Discord raises it for
 * large bots on request).
 */
export function makeRest(token: string, apiUrl: string, o: { globalRequestsPerSecond?: number; waitOnRateLimit?: boolean } = {}): REST {
  // A 429 is thrown to the kit's limiter (which pauses the channel and retries the same chunk), not slept on here;
  // `waitOnRateLimit` (the history reads): discord.js waits it out itself.
  return new REST({
    api: apiUrl.replace(/\/+$/, ''),
    version: '10',
    ...(o.waitOnRateLimit ? {} : { rejectOnRateLimit: () => true }),
    retries: 2,
    timeout: 15_000,
    ...(o.globalRequestsPerSecond ? { globalRequestsPerSecond: o.globalRequestsPerSecond } : {}),
  }).setToken(token);
}

/** 429 → wait `retry_after`; 5xx and network → retry with backoff; other 4xx → give up. */
export function classifyDiscord(e: unknown): SendErrorDecision {
  if (e instanceof RateLimitError) return { retry: true, afterMs: Math.max(50, e.retryAfter), ...(e.global ? { global: true } : {}) };
  if (e instanceof DiscordAPIError) return e.status >= 500 ? { retry: true } : { retry: false };
  if (e instanceof HTTPError) return { retry: e.status >= 500 || e.status === 0 };
  const code = (e as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && /^(ECONNRESET|ECONNREFUSED|ETIMEDOUT|EPIPE|UND_ERR_)/.test(code)) return { retry: true };
  if (e instanceof Error && (e.name === 'AbortError' || e.name === 'TimeoutError')) return { retry: true };
  return { retry: false };
}

/** Gateway close codes after which Discord will not take the connection back, and what to tell the user. */
const FATAL_CLOSE: Record<number, string> = {
  4004: 'Discord rejected the bot token (close 4004, authentication failed). Set a valid chatCToken; the channel stays stopped until then.',
  4013: 'Discord refused the gateway intents as invalid (close 4013). This is a bug in Keel; please report it.',
  4014: 'Discord refused the privileged intents (close 4014, disallowed intents). In the Developer Portal → your application → Bot, enable the Message Content intent (and Server Members, Presence), then restart Keel.',
};

/** A gateway connection that Discord closed for good. */
export class GatewayClosedError extends Error {
  constructor(readonly code: number) {
    super(`the gateway closed the connection with code ${code}`);
    this.name = 'GatewayClosedError';
  }
}

/** The message to stop with when `e` is an error no retry fixes (bad token, disallowed intents), else undefined. */
export function fatalMessage(e: unknown): string | undefined {
  if (e instanceof GatewayClosedError) return FATAL_CLOSE[e.code];
  if (e instanceof DiscordjsError && e.code === 'TokenInvalid')
    return 'Discord rejected the bot token (GET /gateway/bot answered 401). Set a valid chatCToken; the channel stays stopped until then.';
  if (e instanceof DiscordAPIError && e.status === 401)
    return 'Discord rejected the bot token (401 Unauthorized). Set a valid chatCToken; the channel stays stopped until then.';
  if (e instanceof Error && /^Used disallowed intents$/.test(e.message)) return FATAL_CLOSE[4014];
  if (e instanceof Error && /^Authentication failed$/.test(e.message)) return FATAL_CLOSE[4004];
  return undefined;
}

const mentions = { parse: ['users'], replied_user: true };

/** Direct-message channels remembered per user id (a user's DM channel never changes; this only bounds memory). */
export const MAX_DM_CHANNELS = 5000;

/** Sends one chunk; returns the Discord message id. */
export function sendChunk(rest: REST, channelId: string, c: DcChunk): Promise<string> {
  const reference = c.replyTo ? { message_reference: { message_id: c.replyTo, channel_id: channelId, fail_if_not_exists: false } } : {};
  const base = { nonce: c.nonce, enforce_nonce: true, allowed_mentions: mentions, ...reference };
  const route = `/channels/${channelId}/messages` as const;
  if (c.kind === 'file') return sendFile(rest, route, base, c);
  return rest.post(route, { body: { ...base, content: c.content, ...(c.components ? { components: c.components } : {}) } }).then(messageId);
}

const messageId = (m: unknown) => (m as { id: string }).id;

async function sendFile(rest: REST, route: `/channels/${string}/messages`, base: object, c: DcChunk & { kind: 'file' }): Promise<string> {
  const name = basename(c.path);
  const data = await readFile(c.path);
  const body = { ...base, ...(c.caption ? { content: c.caption.slice(0, 2000) } : {}), attachments: [{ id: 0, filename: name }] };
  return messageId(await rest.post(route, { body, files: [{ name, data }] }));
}

/**
 * Sends one chunk to a channel id, or to a user id: Discord answers a user id with "Unknown Channel" (10003), and then
 * the direct-message channel with that user is opened (`POST /users/@me/channels`) and remembered in `dms`.
 */
export function sendChunkTo(rest: REST, target: string, c: DcChunk, dms: Map<string, string>): Promise<string> {
  return sendChunk(rest, dms.get(target) ?? target, c).then(undefined, async (e: unknown) => {
    if (!(e instanceof DiscordAPIError) || e.code !== 10003 || dms.has(target)) throw e;
    const dm = (await rest.post('/users/@me/channels', { body: { recipient_id: target } })) as { id: string };
    dms.set(target, dm.id);
    // The oldest goes past the cap (a bot that writes to many people first): asked again if it is needed again.
    if (dms.size > MAX_DM_CHANNELS) dms.delete(dms.keys().next().value as string);
    return sendChunk(rest, dm.id, c);
  });
}

/**
 * A message's buttons as Discord components: one action row per row of buttons (at most 5 rows of 5). A link
 * becomes a link button; an approval button (sdk/approvals.ts: `apr:y|n:<id>`) a green Approve / red Refuse with
 * that custom id, answered by approval-tap.ts. Other callback buttons are left out: nothing on Discord answers them.
 */
export function componentsOf(buttons: OutboundMessage['buttons']): Json[] | undefined {
  const rows = (buttons ?? [])
    .slice(0, 5)
    .map((row) => {
      const built = row.slice(0, 5).flatMap((b) => {
        const label = b.text.slice(0, 80) || '…';
        if (b.url) return [new ButtonBuilder().setStyle(ButtonStyle.Link).setLabel(label).setURL(b.url)];
        const tap = parseApprovalButton(b.callback_data);
        if (!tap) return [];
        const style = tap.decision === 'approve' ? ButtonStyle.Success : ButtonStyle.Danger;
        return [new ButtonBuilder().setStyle(style).setLabel(label).setCustomId(b.callback_data!)];
      });
      return built.length ? (new ActionRowBuilder<ButtonBuilder>().addComponents(built).toJSON() as unknown as Json) : undefined;
    })
    .filter((r) => r !== undefined);
  return rows.length ? rows : undefined;
}
