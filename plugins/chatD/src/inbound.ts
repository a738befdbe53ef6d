/**
 * A Socket Mode envelope → an ingress item (only what can become an action or a command, or change one: user
 * messages of the four subscribed message events, `app_mention` events under the same key, slash commands, and a
 * person's edits and deletions of messages), and a recorded item → an InboundMessage for `receive`.
 * Own and other bots' messages (and their edits and deletions), unfurls, joins and the like are acknowledged and
 * dropped here.
 */
import type { IngressItem } from '../../../sdk/channel-kit/index.js';
import { editKey, isBuiltin } from '../../../sdk/channel-kit/index.js';
import { type InboundMessage, parseApprovalButton } from '../../../sdk/index.js';
import type { SlackFile } from './files.js';
import type { Envelope } from './socket.js';

/** What the ingress keeps of an envelope (JSON). */
export type SlackItem =
  | { kind: 'message'; event: SlackMessageEvent }
  /** A person's edit: `event` the message as it reads now (its own ts), `editedTs` Slack's `message.edited.ts`. */
  | { kind: 'edit'; event: SlackMessageEvent; editedTs: string }
  /** A deleted message (`ts` its own). */
  | { kind: 'delete'; channel: string; ts: string }
  | { kind: 'command'; command: string; text: string; channel: string; user: string; userName?: string; triggerId?: string }
  /** A tap on an approval button (`block_actions`): `data` the button's action_id (`apr:y|n:<id>`), `ts` its message. */
  | { kind: 'tap'; data: string; channel: string; user: string; ts: string; thread?: string };

export interface SlackMessageEvent {
  type: 'message';
  channel: string;
  channel_type?: 'channel' | 'group' | 'im' | 'mpim' | 'app_home';
  user?: string;
  text?: string;
  ts: string;
  thread_ts?: string;
  bot_id?: string;
  subtype?: string;
  /** Downloaded by files.ts before `receive` (the text here leaves them out). */
  files?: SlackFile[];
}

/** Message subtypes that are a person writing (everything else: edits, joins, topic changes ... is not a task). */
const USER_SUBTYPES = new Set([undefined, 'file_share', 'thread_broadcast']);

/** The fields of a message that say who wrote it. */
interface Author {
  user?: string;
  bot_id?: string;
  subtype?: string;
}

/** Whether a message is the bot's own, another bot's, or has no person as its author. */
const notAPerson = (m: Author, botUserId: string | undefined) =>
  !!m.bot_id || m.subtype === 'bot_message' || !m.user || (botUserId !== undefined && m.user === botUserId);

/** The key of a message's first delivery (and of its action): `channel:ts`. */
export const messageKey = (channel: string, ts: string) => `${channel}:${ts}`;

/**
 * The ingress item of a message event, or undefined when it is not a person writing: the one filter for messages
 * from the socket and from the history (catchup.ts), so a message seen both ways has the same id.
 */
export function messageItemOf(ev: SlackMessageEvent | undefined, botUserId: string | undefined): IngressItem<SlackItem> | undefined {
  if (ev?.type !== 'message' || !ev.channel || !ev.ts) return undefined;
  if (notAPerson(ev, botUserId)) return undefined;
  if (!USER_SUBTYPES.has(ev.subtype)) return undefined;
  return { messageId: messageKey(ev.channel, ev.ts), chatId: ev.channel, payload: { kind: 'message', event: ev } };
}

/** A `message_changed` or `message_deleted` event, as far as chatD reads it. */
interface SlackChangeEvent {
  type: 'message';
  subtype: string;
  channel?: string;
  channel_type?: SlackMessageEvent['channel_type'];
  /** The message as it reads now (message_changed). */
  message?: Author & {
    text?: string;
    ts?: string;
    thread_ts?: string;
    files?: SlackFile[];
    /** Set when a person edited the text (Slack's own changes, an unfurl, leave it out, or as it was). */
    edited?: { user?: string; ts?: string };
  };
  previous_message?: Author & { text?: string; ts?: string };
  /** message_deleted: the ts of the message deleted. */
  deleted_ts?: string;
}

/**
 * The ingress item of a person's edit or deletion of a message, or undefined for any other change. An edit
 * (`message_changed` with `message.edited`) is keyed by the kit's `editKey(<channel>:<ts>, edited.ts)`, so each
 * version is handled once; a deletion (`message_deleted`, or `message_changed` to a `tombstone`, which is how Slack
 * deletes a thread's first message that has replies) by `<channel>:<ts>:deleted`. Left out: changes without
 * `edited` (Slack's own, such as a link unfurled), an edit that leaves the text as it was, and edits and deletions of
 * the bot's own messages (its status message is edited, then deleted, at every action) and other bots'.
 * Only from the socket: catch-up reads messages as they read now, not their edits.
 */
export function changeItemOf(ev: SlackChangeEvent, botUserId: string | undefined): IngressItem<SlackItem> | undefined {
  const channel = ev.channel;
  if (!channel) return undefined;
  const m = ev.message;
  const prev = ev.previous_message;
  if (ev.subtype === 'message_deleted' || (ev.subtype === 'message_changed' && m?.subtype === 'tombstone')) {
    const ts = ev.deleted_ts ?? m?.ts ?? prev?.ts;
    if (!ts || (prev && notAPerson(prev, botUserId))) return undefined;
    return { messageId: `${messageKey(channel, ts)}:deleted`, chatId: channel, payload: { kind: 'delete', channel, ts } };
  }
  if (ev.subtype !== 'message_changed' || !m?.ts || !m.edited?.ts) return undefined;
  if (notAPerson(m, botUserId) || (botUserId !== undefined && m.edited.user === botUserId)) return undefined;
  if (!USER_SUBTYPES.has(m.subtype)) return undefined;
  if (prev && (prev.text ?? '') === (m.text ?? '')) return undefined;
  const channelType = ev.channel_type ?? (channel.startsWith('D') ? 'im' : undefined);
  const event: SlackMessageEvent = {
    type: 'message',
    channel,
    ...(channelType ? { channel_type: channelType } : {}),
    user: m.user!,
    text: m.text ?? '',
    ts: m.ts,
    ...(m.thread_ts ? { thread_ts: m.thread_ts } : {}),
    ...(m.subtype ? { subtype: m.subtype } : {}),
    ...(m.files?.length ? { files: m.files } : {}),
  };
  return {
    messageId: editKey(messageKey(channel, m.ts), m.edited.ts),
    chatId: channel,
    payload: { kind: 'edit', event, editedTs: m.edited.ts },
  };
}

/**
 * An `app_mention` event (an app subscribed to it as well as, or instead of, `message.channels`) as the message event
 * it is about: the same `channel:ts` key, so a mention that raises both events is one action. It names no
 * channel_type (it is not a direct message: Slack sends `message.im` for those) and no subtype.
 */
function mentionAsMessage(ev: Record<string, unknown>): SlackMessageEvent | undefined {
  if (typeof ev.channel !== 'string' || typeof ev.ts !== 'string') return undefined;
  const str = (k: string) => (typeof ev[k] === 'string' ? { [k]: ev[k] as string } : {});
  return {
    type: 'message',
    channel: ev.channel,
    ts: ev.ts,
    ...str('user'),
    ...str('text'),
    ...str('thread_ts'),
    ...str('bot_id'),
    ...(Array.isArray(ev.files) && ev.files.length ? { subtype: 'file_share', files: ev.files as SlackFile[] } : {}),
  };
}

/** The ingress item of an envelope, or undefined when it is nothing to act on. */
export function itemOf(e: Envelope, botUserId: string | undefined): IngressItem<SlackItem> | undefined {
  if (e.type === 'events_api') {
    const ev = (e.body as { event?: Record<string, unknown> }).event;
    if (ev?.type === 'app_mention') return messageItemOf(mentionAsMessage(ev), botUserId);
    if (ev?.type === 'message' && (ev.subtype === 'message_changed' || ev.subtype === 'message_deleted'))
      return changeItemOf(ev as unknown as SlackChangeEvent, botUserId);
    return messageItemOf(ev as SlackMessageEvent | undefined, botUserId);
  }
  if (e.type === 'slash_commands') {
    const b = e.body as { command?: string; text?: string; channel_id?: string; user_id?: string; user_name?: string; trigger_id?: string };
    if (!b.command || !b.channel_id || !b.user_id) return undefined;
    return {
      // Slack sends the same envelope id again when it redelivers; the trigger id is per invocation.
      messageId: `cmd:${b.trigger_id ?? e.envelopeId}`,
      chatId: b.channel_id,
      payload: {
        kind: 'command',
        command: b.command,
        text: b.text ?? '',
        channel: b.channel_id,
        user: b.user_id,
        ...(b.user_name ? { userName: b.user_name } : {}),
        ...(b.trigger_id ? { triggerId: b.trigger_id } : {}),
      },
    };
  }
  if (e.type === 'interactive') return tapItemOf(e);
  return undefined;
}

/**
 * A `block_actions` interaction on an approval button of one of the bot's messages (approval-tap.ts), or undefined
 * for any other interaction. Keyed by its trigger id (one per tap; a redelivered envelope carries the same).
 */
function tapItemOf(e: Envelope): IngressItem<SlackItem> | undefined {
  const b = e.body as {
    type?: string;
    trigger_id?: string;
    user?: { id?: string };
    channel?: { id?: string };
    container?: { channel_id?: string; message_ts?: string; thread_ts?: string };
    message?: { ts?: string; thread_ts?: string };
    actions?: Array<{ action_id?: string; action_ts?: string }>;
  };
  const action = b.actions?.find((a) => parseApprovalButton(a.action_id));
  const channel = b.channel?.id ?? b.container?.channel_id;
  const ts = b.container?.message_ts ?? b.message?.ts;
  if (b.type !== 'block_actions' || !action || !b.user?.id || !channel || !ts) return undefined;
  const thread = b.container?.thread_ts ?? b.message?.thread_ts;
  return {
    messageId: `tap:${b.trigger_id ?? `${e.envelopeId}`}`,
    chatId: channel,
    payload: { kind: 'tap', data: action.action_id!, channel, user: b.user.id, ts, ...(thread && thread !== ts ? { thread } : {}) },
  };
}

/** `/status`, `!status` (in a message) → 'status' when it is one of the built-in commands. */
function textCommand(text: string): string | undefined {
  const m = /^[/!]([a-z]+)\s*$/i.exec(text.trim());
  const name = m?.[1]?.toLowerCase();
  return isBuiltin(name) ? name : undefined;
}

/** Whether `raw` mentions the user `id` (`<@U…>`, or the older `<@U…|name>`). */
export function mentions(raw: string, id: string): boolean {
  return raw.includes(`<@${id}>`) || raw.includes(`<@${id}|`);
}

const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>' };

/**
 * A Slack message's text as the person wrote it. Slack escapes every `&`, `<` and `>` a person types (also in code)
 * as `&amp;`, `&lt;`, `&gt;`, and writes mentions, channels, links and dates as control sequences in `<…>`
 * (https://api.slack.com/reference/surfaces/formatting): those become their readable form, and the entities the
 * characters again, in one pass (so a typed `&lt;` stays `&lt;`). The bot's own mention is dropped; another
 * person's is `@name` with the name the sequence carries, else the one `names` has for the id (names.ts), else the
 * id. The rest of the text (mrkdwn `*bold*`, code, quotes) is left as written.
 * @example slackPlainText('run `ls &gt; out` &amp; ask <@U0BOB|bob> <https://x.io/?a=1&amp;b=2|here>', 'U0BOT')
 * // 'run `ls > out` & ask @bob here (https://x.io/?a=1&b=2)'
 */
export function slackPlainText(raw: string, botUserId?: string, names?: ReadonlyMap<string, string>): string {
  return raw.replace(/<([^<>\n]*)>|&(?:amp|lt|gt);/g, (all, inner: string | undefined) => {
    if (inner === undefined) return ENTITIES[all] ?? all;
    const bar = inner.indexOf('|');
    const target = bar >= 0 ? inner.slice(0, bar) : inner;
    const label = bar >= 0 ? decode(inner.slice(bar + 1)) : undefined;
    if (target.startsWith('@')) {
      const id = target.slice(1);
      if (botUserId !== undefined && id === botUserId) return '';
      return `@${(label || names?.get(id) || id).replace(/^@/, '')}`;
    }
    if (target.startsWith('#')) return `#${(label || target.slice(1)).replace(/^#/, '')}`;
    if (target.startsWith('!')) {
      const [command = '', arg] = target.slice(1).split('^');
      // <!date^1392734382^{date}|Feb 18, 2014>: the fallback, else the time itself.
      if (command === 'date') return label || (arg && /^\d+$/.test(arg) ? new Date(Number(arg) * 1000).toISOString() : '');
      if (label) return label.startsWith('@') ? label : `@${label}`;
      return `@${command === 'subteam' && arg ? arg : command}`;
    }
    const url = decode(target);
    if (!label) return url.replace(/^mailto:/, '');
    if (label === url || label === url.replace(/^(?:https?:\/\/|mailto:)/, '')) return label;
    return `${label} (${url})`;
  });
}

const decode = (s: string) => s.replace(/&(?:amp|lt|gt);/g, (e) => ENTITIES[e] ?? e);

/**
 * The InboundMessage of a recorded item. `follows(channel, threadTs)`: whether the bot takes part in that thread (a
 * reply there counts as addressed to it without a mention). `names`: people's names by member id (names.ts), for
 * the sender's `userName` and the mentions in the text. An edit is the message as its first delivery was (its id,
 * its gating) with the text it has now: what the kit's `edited` takes.
 */
export function toInbound(
  item: IngressItem<Exclude<SlackItem, { kind: 'delete' | 'tap' }>>,
  botUserId: string | undefined,
  follows?: (channel: string, threadTs: string) => boolean,
  names?: ReadonlyMap<string, string>,
): InboundMessage {
  const p = item.payload;
  if (p.kind === 'command') {
    // `/keel status` (one app command with the built-in as its text) or `/status` (each registered on its own).
    const first = p.text.trim().split(/\s+/)[0]?.toLowerCase() ?? '';
    const own = p.command
      .replace(/^\//, '')
      .replace(/^keel-/, '')
      .toLowerCase();
    const command = isBuiltin(own) ? own : isBuiltin(first) && p.text.trim().split(/\s+/).length === 1 ? first : undefined;
    return {
      channel: 'chatD',
      messageId: item.messageId,
      chatId: p.channel,
      userId: p.user,
      ...(p.userName ? { userName: p.userName } : {}),
      text: command ? `/${command}` : p.text.trim(),
      isGroup: !p.channel.startsWith('D'),
      mentioned: true,
      ...(command ? { command } : {}),
    };
  }
  const ev = p.event;
  const messageId = p.kind === 'edit' ? messageKey(ev.channel, ev.ts) : item.messageId;
  const raw = ev.text ?? '';
  const inThread = ev.thread_ts !== undefined && ev.thread_ts !== ev.ts;
  const mentioned =
    ev.channel_type === 'im' ||
    (botUserId !== undefined && mentions(raw, botUserId)) ||
    (inThread && follows?.(ev.channel, ev.thread_ts!) === true);
  // Only trimmed: a pasted block keeps its lines and indentation.
  const text = slackPlainText(raw, botUserId, names).trim();
  const command = textCommand(text);
  const userName = names?.get(ev.user!);
  return {
    channel: 'chatD',
    messageId,
    chatId: ev.channel,
    userId: ev.user!,
    ...(userName ? { userName } : {}),
    text,
    isGroup: ev.channel_type !== 'im',
    mentioned,
    ...(command ? { command } : {}),
    ...(ev.thread_ts ? { threadId: ev.thread_ts } : {}),
    // The kit's key is channel-qualified; reactions and threads need Slack's own ts.
    replyTo: { messageId: ev.ts, ...(ev.thread_ts ? { threadTs: ev.thread_ts } : {}) },
  };
}
