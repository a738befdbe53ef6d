/**
 * `keel trace <action id | platform message id>`: reads the persisted timelines directly (read-only), so it works
 * whether or not Keel runs. A platform message id finds the action(s) it started and the records of it being
 * ignored. Exit codes: 0 found, 1 nothing recorded for the id, 2 bad input.
 */
import type { CommandContext } from '../../../sdk/index.js';
import { TimelineStore, type IgnoredRecord, type Timeline, type TimelineEvent } from './store.js';

const IGNORED_WHY: Record<string, string> = {
  'auto-reply-off': 'auto-reply is off and it was neither a command nor a mention',
  'not-admin': 'the sender is not an admin and only admins may do this',
  duplicate: 'the same platform message was already received (a redelivery)',
  'dropped-by-hook': 'a messageIn hook dropped it',
  'rate-limited': 'the sender was rate limited',
  empty: 'it had no text and no attachments',
  'edit-too-old': 'an edit of it came more than 15 minutes after it was written',
  'edit-unchanged': 'an edit of it left the text as its action already had it',
};

function describeEvent(e: TimelineEvent): string {
  const d = e.data;
  switch (e.type) {
    case 'received':
      return (
        `from ${d.channel}${d.userId ? ` user ${d.userId}` : ''}, platform message ${d.messageId}` +
        (d.untrusted ? ', untrusted (the sender is not an admin)' : '') +
        (d.quotedFrom
          ? `, quoting a message of ${d.quotedFrom}${d.quotedTrusted ? '' : ' (untrusted: privileged skills are refused to this action)'}`
          : '') +
        (d.editOf
          ? `, an edit of it${d.editedAt ? ` (${d.editedAt})` : ''}${d.after ? `, after action ${d.after} had taken up its earlier version` : ''}`
          : '')
      );
    case 'queued':
      return `source ${d.source}`;
    case 'amended':
      return `the message was edited${d.editedAt ? ` (${d.editedAt})` : ''} before the action started; it now reads: ${d.task}`;
    case 'started':
      return `attempt ${d.attempt}`;
    case 'model_call':
      return `${d.provider}/${d.model} (${d.purpose}) ${d.ok ? `${d.inputTokens} in + ${d.outputTokens} out tokens` : `failed: ${d.error}`}, ${d.durationMs} ms`;
    case 'skill_call':
      return `${d.name} ${d.ok ? 'ok' : `failed${d.code ? ` (${d.code})` : ''}: ${d.error}`}, ${d.durationMs} ms`;
    case 'reply':
      return `delivered on ${d.channel}${d.to ? ` to ${d.to}` : ''} as platform message ${(d.messageIds as string[] | undefined)?.join(', ') ?? d.messageId}`;
    case 'retry':
      return `retry ${d.retry} of ${d.maxRetries}: ${d.reason}${d.notBefore ? ` (not before ${d.notBefore})` : ''}`;
    case 'settled':
      return `${d.status}${d.result ? `: ${d.result}` : d.reason ? `: ${d.reason}` : ''}`;
    default:
      return JSON.stringify(d);
  }
}

export function formatTimeline(t: Timeline): string {
  const a = t.action;
  const lines = [`Action ${a.id} · ${a.status} · source ${a.source}`, `Task: ${a.task.replace(/\s+/g, ' ').slice(0, 200)}`];
  const start = Date.parse(t.events[0]?.at ?? a.createdAt);
  for (const e of t.events) {
    const offset = ((Date.parse(e.at) - start) / 1000).toFixed(3);
    lines.push(`  ${e.at}  +${offset.padStart(8)}s  ${e.type.padEnd(10)}  ${describeEvent(e)}`);
  }
  if (t.dropped) lines.push(`  (${t.dropped} older event(s) dropped: timelineMaxEvents)`);
  return lines.join('\n');
}

export function formatIgnored(r: IgnoredRecord): string {
  return `Message ${r.messageId} on ${r.channel}${r.userId ? ` from user ${r.userId}` : ''} at ${r.at} did not become an action: ${r.reason} (${IGNORED_WHY[r.reason] ?? r.reason})`;
}

export async function traceCommand(c: CommandContext): Promise<number> {
  const id = String(c.args[0] ?? '').trim();
  const json = c.options.json === true;
  if (!id) {
    process.stderr.write('keel trace: give an action id (act_...) or a platform message id\n');
    return 2;
  }
  const store = TimelineStore.read(c.home);
  let actions: Timeline[] = [];
  let ignored: IgnoredRecord[] = [];
  try {
    if (store) {
      const direct = store.get(id);
      actions = direct ? [direct] : store.byMessageId(id);
      ignored = direct ? [] : store.ignoredFor(id);
    }
  } finally {
    store?.close();
  }
  if (json) process.stdout.write(`${JSON.stringify({ query: id, actions, ignored }, null, 2)}\n`);
  if (!actions.length && !ignored.length) {
    if (!json) {
      process.stderr.write(
        store
          ? `keel trace: nothing recorded for "${id}" (timelines keep the newest timelineMaxActions actions; is it the right id?)\n`
          : `keel trace: no timelines recorded yet in ${c.home} (they are written while Keel runs with the timeline plugin)\n`,
      );
    }
    return 1;
  }
  if (!json) {
    const parts = [...actions.map(formatTimeline), ...ignored.map(formatIgnored)];
    process.stdout.write(`${parts.join('\n\n')}\n`);
  }
  return 0;
}
