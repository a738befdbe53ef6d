/**
 * Files shared in a Slack message: downloaded from `url_private_download` with the bot token as
 * `Authorization: Bearer` (Slack's private file URLs need it; the token needs files:read) to
 * `downloads/chatD/<channel>_<ts>_<name>`, and named in the task like chatA's documents and photos. The token goes
 * only to Slack's own file host (or the host of a `chatDApiUrl` override), never to the address of an external file.
 * A file that cannot be saved is a note in the task, not a lost message.
 */
import { saveInboundFiles } from '../../../sdk/channel-kit/index.js';
import type { InboundMessage, Logger } from '../../../sdk/index.js';

/** The parts of a Slack file object (in a message event's `files`) we use. */
export interface SlackFile {
  id?: string;
  name?: string;
  title?: string;
  mimetype?: string;
  size?: number;
  url_private?: string;
  url_private_download?: string;
  /** `hosted` (uploaded to Slack), `external` (a link to another service), `tombstone` (deleted), ... */
  mode?: string;
}

/** Whether the bot token may be sent to `url`: https on slack.com, or the host that stands in for Slack's API. */
export function tokenMayGo(url: string, apiUrl: string): boolean {
  try {
    const u = new URL(url);
    if (u.protocol === 'https:' && (u.hostname === 'slack.com' || u.hostname.endsWith('.slack.com'))) return true;
    return u.origin === new URL(apiUrl).origin;
  } catch {
    return false;
  }
}

/**
 * `inbound` with the message's files saved (attachments) or noted (text), for `receive`. `edit` (Slack's
 * `edited.ts`): the files of an edited message go under names of their own (`<channel>_<ts>_e<edited ts>_<name>`),
 * so the files an earlier version's action reads are never rewritten, or removed by a failed download, under it.
 */
export async function withSlackFiles(
  inbound: InboundMessage,
  files: SlackFile[] | undefined,
  d: { home: string; botToken: string; apiUrl: string; log: Logger; signal?: AbortSignal; edit?: string },
): Promise<InboundMessage> {
  const list = (files ?? []).filter((f) => f.mode !== 'tombstone');
  if (!list.length) return inbound;
  const ts = `${String(inbound.replyTo?.messageId ?? inbound.messageId)}${d.edit ? `_e${d.edit}` : ''}`;
  const { attachments, notes } = await saveInboundFiles(
    list.map((f) => ({ url: f.url_private_download ?? f.url_private, name: f.name ?? f.title, mime: f.mimetype, size: f.size })),
    {
      home: d.home,
      channel: 'chatD',
      prefix: `${inbound.chatId}_${ts}`,
      platform: 'Slack',
      log: d.log,
      headers: (url) => (tokenMayGo(url, d.apiUrl) ? { authorization: `Bearer ${d.botToken}` } : undefined),
      ...(d.signal ? { signal: d.signal } : {}),
    },
  );
  return {
    ...inbound,
    text: [inbound.text, ...notes].filter(Boolean).join('\n'),
    ...(attachments.length ? { attachments: [...(inbound.attachments ?? []), ...attachments] } : {}),
  };
}
