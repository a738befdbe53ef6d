/**
 * The Slack Web API side of sending: one ledgered chunk → one call (chat.postMessage, or files.uploadV2 for a
 * file), the error classification the kit's limiter uses, and the errors no retry fixes (bad credentials).
 */
import { basename } from 'node:path';
import { ErrorCode, type WebClient } from '@slack/web-api';
import type { SendErrorDecision } from '../../../sdk/channel-kit/index.js';
import { type Json, type OutboundMessage, parseApprovalButton } from '../../../sdk/index.js';

/** One ledger entry of an outbound Slack message. */
export type SlackChunk =
  /** `blocks`: Block Kit blocks (an approval request's text and buttons), on the last text chunk; `text` is their fallback. */
  | { kind: 'text'; text: string; thread?: string; blocks?: Json[] }
  | { kind: 'file'; path: string; title?: string; comment?: string; thread?: string };

/** Slack conversation ids the channel sends to: public channel, private channel / group DM, direct message. */
export const CONVERSATION_ID = /^[CGD][A-Z0-9]{2,}$/;

/** Slack's `{ ok: false, error }` codes that mean "try again later". */
const TRANSIENT = new Set(['ratelimited', 'internal_error', 'fatal_error', 'service_unavailable', 'request_timeout', 'team_added_to_org']);
/** Codes that mean the credentials are wrong: retrying cannot help. */
const BAD_AUTH = new Set([
  'invalid_auth',
  'not_authed',
  'account_inactive',
  'token_revoked',
  'token_expired',
  'not_allowed_token_type',
  'no_permission',
  'missing_scope',
]);

interface SlackError {
  code?: string;
  data?: { error?: string; needed?: string };
  retryAfter?: number;
  statusCode?: number;
}

/** The Slack error code of a Web API failure (`invalid_auth` ...), if it is one. */
export function slackErrorCode(e: unknown): string | undefined {
  const x = e as SlackError | undefined;
  return x?.code === ErrorCode.PlatformError ? x.data?.error : undefined;
}

/** 429 → wait `Retry-After`; 5xx, network and Slack's transient codes → retry with backoff; the rest → give up. */
export function classifySlack(e: unknown): SendErrorDecision {
  const x = e as SlackError | undefined;
  if (x?.code === ErrorCode.RateLimitedError) return { retry: true, afterMs: Math.max(1, Number(x.retryAfter ?? 1)) * 1000 };
  if (x?.code === ErrorCode.RequestError) return { retry: true };
  if (x?.code === ErrorCode.HTTPError) return (x.statusCode ?? 0) >= 500 ? { retry: true } : { retry: false };
  const code = slackErrorCode(e);
  if (code && TRANSIENT.has(code)) return { retry: true };
  return { retry: false };
}

/**
 * The one clear message for credentials Slack refuses (from auth.test with the bot token, or apps.connections.open
 * with the app token), else undefined. Never contains a token.
 */
export function badCredentials(e: unknown, which: 'bot' | 'app'): string | undefined {
  const code = slackErrorCode(e);
  if (!code || !BAD_AUTH.has(code)) return undefined;
  if (which === 'bot')
    return `Slack rejected the bot token (auth.test answered ${code}). Set a valid chatDBotToken (xoxb-...); the channel stays stopped until then.`;
  const hint =
    code === 'not_allowed_token_type' || code === 'missing_scope' ? ' The app-level token needs the scope connections:write.' : '';
  return `Slack rejected the app-level token (apps.connections.open answered ${code}).${hint} Set a valid chatDAppToken (xapp-...) with Socket Mode enabled; the channel stays stopped until then.`;
}

/** Sends one chunk; returns the Slack id (message ts, or file id for a file). */
export async function sendChunk(client: WebClient, channel: string, c: SlackChunk): Promise<string> {
  if (c.kind === 'file') {
    const r = (await client.filesUploadV2({
      channel_id: channel,
      file: c.path,
      filename: basename(c.path),
      title: c.title ?? basename(c.path),
      ...(c.comment ? { initial_comment: c.comment } : {}),
      ...(c.thread ? { thread_ts: c.thread } : {}),
    } as never)) as unknown as { files?: Array<{ files?: Array<{ id?: string }> }> };
    return r.files?.[0]?.files?.[0]?.id ?? 'file';
  }
  // mrkdwn is Slack's default for `text`; the kit rendered it.
  const r = await client.chat.postMessage({
    channel,
    text: c.text,
    ...(c.blocks ? { blocks: c.blocks as never } : {}),
    ...(c.thread ? { thread_ts: c.thread } : {}),
  });
  return String(r.ts);
}

/** Escapes text for Slack where no formatting is wanted (`&`, `<`, `>` are Slack's control characters). */
export const slackEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const REACTION_NAMES: Record<string, string> = {
  '\u{1F44D}': 'thumbsup',
  '\u2764\uFE0F': 'heart',
  '\u2764': 'heart',
  '\u{1F525}': 'fire',
  '\u{1F602}': 'joy',
  '\u2705': 'white_check_mark',
  '\u{1F440}': 'eyes',
  '\u{1F914}': 'thinking_face',
  '\u{1F389}': 'tada',
  '\u{1F44E}': 'thumbsdown',
  '\u{1F64F}': 'pray',
};

/** The Slack reaction name of an emoji (`👍`, `:tada:` or `tada`), or undefined when it has none we know. */
export function reactionName(emoji: string): string | undefined {
  const e = emoji.trim();
  const named = /^:?([a-z0-9_+'-]+):?$/.exec(e);
  if (named) return named[1];
  return REACTION_NAMES[e];
}

/**
 * A message's buttons as Block Kit: the text as a mrkdwn section (Slack shows blocks instead of `text`, which stays
 * the notification's fallback), then one `actions` block per row. An approval button (sdk/approvals.ts:
 * `apr:y|n:<id>`) becomes a primary Approve / danger Refuse button whose action_id and value are that data, answered
 * by approval-tap.ts; a link a link button. Other callback buttons are left out: nothing on Slack answers them.
 */
export function blocksOf(text: string, buttons: OutboundMessage['buttons']): Json[] | undefined {
  const rows = (buttons ?? []).slice(0, 24).flatMap((row, r) => {
    const elements = row.slice(0, 25).flatMap((b, i): Json[] => {
      const label = { type: 'plain_text', text: b.text.slice(0, 75) || '…' };
      if (b.url) return [{ type: 'button', text: label, url: b.url, action_id: `link:${r}:${i}` }];
      const tap = parseApprovalButton(b.callback_data);
      if (!tap) return [];
      return [
        {
          type: 'button',
          text: label,
          style: tap.decision === 'approve' ? 'primary' : 'danger',
          action_id: b.callback_data!,
          value: b.callback_data!,
        },
      ];
    });
    return elements.length ? [{ type: 'actions', elements }] : [];
  });
  if (!rows.length) return undefined;
  return [{ type: 'section', text: { type: 'mrkdwn', text: text.slice(0, 3000) || ' ' } }, ...rows];
}
