/**
 * A recorded Discord message or slash command (the raw gateway/REST JSON, as the ingress keeps it) → an
 * InboundMessage for `receive` or a built-in command. Runs once per message (the ingress dedupes by snowflake),
 * possibly again after a crash, so every step is repeatable: downloads overwrite, `receive` recognises an action
 * it already queued.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { InboundMessage } from '../../../sdk/index.js';

interface DcUser {
  id: string;
  username?: string;
  bot?: boolean;
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
  referenced_message?: { author?: DcUser } | null;
  attachments?: Array<{ id: string; filename: string; url?: string; content_type?: string; size?: number }>;
}

/** The parts of an application command interaction we use. */
export interface DcInteraction {
  id: string;
  token: string;
  application_id?: string;
  type: number;
  channel_id?: string;
  guild_id?: string;
  member?: { user: DcUser };
  user?: DcUser;
  data?: { name?: string };
}

/** What the ingress keeps per entry. */
export type DcPayload = { message: DcInboundMessage } | { interaction: DcInteraction };

/** Default (0) and reply (19) are what people write; joins, pins, boosts and the like are not messages to answer. */
const USER_TYPES = new Set([0, 19]);

/** Whether a message is one to record: written by a person (not this bot, another bot or a webhook). */
export function isUserMessage(m: DcInboundMessage, botId: string | undefined): boolean {
  if (!m.author || m.author.bot || m.webhook_id || (botId && m.author.id === botId)) return false;
  return USER_TYPES.has(m.type ?? 0);
}

async function download(
  dir: string,
  a: NonNullable<DcInboundMessage['attachments']>[number],
  prefix: string,
  signal?: AbortSignal,
): Promise<string | undefined> {
  if (!a.url || !/^https?:\/\//.test(a.url)) return undefined;
  const res = await fetch(a.url, signal ? { signal } : {});
  if (!res.ok) throw new Error(`attachment download failed: HTTP ${res.status}`);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${prefix}_${a.filename.replace(/[^\w.-]+/g, '_').slice(-100)}`);
  writeFileSync(path, Buffer.from(await res.arrayBuffer()), { mode: 0o600 });
  return path;
}

/** The inbound message of a Discord message (attachments downloaded under downloads/chatC/). */
export async function messageToInbound(
  m: DcInboundMessage,
  d: { home: string; botId: string | undefined; signal?: AbortSignal },
): Promise<InboundMessage> {
  const isGroup = m.guild_id !== undefined;
  const botId = d.botId;
  const mentioned =
    !isGroup || (botId !== undefined && ((m.mentions ?? []).some((u) => u.id === botId) || m.referenced_message?.author?.id === botId));
  const text = (botId ? (m.content ?? '').replace(new RegExp(`<@!?${botId}>`, 'g'), '') : (m.content ?? '')).trim();
  const attachments: NonNullable<InboundMessage['attachments']> = [];
  for (const a of m.attachments ?? []) {
    const path = await download(join(d.home, 'downloads', 'chatC'), a, `${m.channel_id}_${m.id}`, d.signal);
    if (path)
      attachments.push({
        path,
        name: a.filename,
        kind: a.content_type?.startsWith('image/') ? 'photo' : 'document',
        ...(a.content_type ? { mime: a.content_type } : {}),
      });
  }
  return {
    channel: 'chatC',
    // Snowflakes are unique across Discord: the message id alone is the dedupe key and the reply target.
    messageId: m.id,
    chatId: m.channel_id,
    userId: m.author.id,
    ...(m.author.username ? { userName: m.author.username } : {}),
    text,
    isGroup,
    mentioned,
    ...(attachments.length ? { attachments } : {}),
    ...(m.guild_id ? { replyTo: { guildId: m.guild_id } } : {}),
  };
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
    ...(user.username ? { userName: user.username } : {}),
    text: `/${i.data.name}`,
    isGroup: i.guild_id !== undefined,
    mentioned: true,
    command: i.data.name,
  };
}
