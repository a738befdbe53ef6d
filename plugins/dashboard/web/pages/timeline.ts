/** One action's timeline (GET /api/tasks/:id, plugin `timeline`): where it came from, model and skill calls, replies, retries. */
import { html, isActionEvent, useApi, Err, fmtTime } from '../ui.js';

interface Event {
  seq: number;
  at: string;
  type: string;
  data: Record<string, unknown>;
}

interface TaskWithTimeline {
  timeline?: { events: Event[]; dropped: number };
}

function summary(type: string, d: Record<string, unknown>): string {
  switch (type) {
    case 'received':
      return `from ${d.channel}${d.userId ? ` user ${d.userId}` : ''}, message ${d.messageId}`;
    case 'queued':
      return `source ${d.source}`;
    case 'started':
      return `attempt ${d.attempt}`;
    case 'model_call':
      return `${d.provider}/${d.model} ${d.ok ? `${d.inputTokens}+${d.outputTokens} tokens` : `failed: ${d.error}`}, ${d.durationMs} ms`;
    case 'skill_call':
      return `${d.name} ${d.ok ? 'ok' : `failed: ${d.error}`}, ${d.durationMs} ms`;
    case 'reply':
      return `delivered on ${d.channel} as ${((d.messageIds as string[] | undefined) ?? [String(d.messageId)]).join(', ')}`;
    case 'retry':
      return `retry ${d.retry} of ${d.maxRetries}: ${d.reason}`;
    case 'settled':
      return `${d.status}${d.result ? `: ${d.result}` : d.reason ? `: ${d.reason}` : ''}`;
    default:
      return JSON.stringify(d);
  }
}

export function Timeline({ id }: { id: string }) {
  const { data, error } = useApi<TaskWithTimeline>(`/api/tasks/${encodeURIComponent(id)}`, { refreshOn: isActionEvent });
  if (error)
    return html`<${Err} error=${error.includes('404') || /No action/.test(error) ? 'No timeline for this action (is the timeline plugin running?)' : error} />`;
  const events = data?.timeline?.events ?? [];
  return html`<ol class="list small" data-testid="timeline">
    ${events.map((e) => html`<li data-type=${e.type}><span class="muted">${fmtTime(e.at)}</span> <strong>${e.type}</strong> ${summary(e.type, e.data)}</li>`)}
    ${data?.timeline?.dropped ? html`<li class="muted">${data.timeline.dropped} older event(s) dropped</li>` : null}
  </ol>`;
}
