/**
 * Live activity: thinking, skill calls with parameters, observations and action lifecycle, as they stream in. An
 * event relayed from another machine on a shared queue says which (`on <host>`).
 */
import { useEffect, useState } from 'preact/hooks';
import { stream, type StreamMsg } from '../api.js';
import { html } from '../ui.js';

const KEPT = 300;
/** Events received since the page loaded, kept across page switches. */
const seen: StreamMsg[] = [];
stream.subscribe((m) => {
  if (m.type !== 'event') return;
  seen.push(m);
  if (seen.length > KEPT) seen.splice(0, seen.length - KEPT);
});

function line(m: StreamMsg): string {
  const d = m.data ?? {};
  switch (m.event) {
    case 'thinking':
      return d.thought;
    case 'action':
      return `${d.skill}(${JSON.stringify(d.parameters)})`;
    case 'observation':
      return `${d.skill} → ${d.success ? 'ok' : 'failed'} (${d.executionTime} ms): ${d.result}`;
    case 'action.queued':
    case 'action.started':
      return `${d.actionId}: ${d.task}`;
    case 'action.completed':
      return `${d.actionId}: ${d.result}`;
    case 'action.failed':
    case 'action.retry':
      return `${d.actionId}: ${d.error}`;
    case 'log':
      return `[${d.level}] ${d.message}`;
    default:
      return JSON.stringify(d);
  }
}

export function Live() {
  const [, tick] = useState(0);
  useEffect(() => stream.subscribe(() => tick((n) => n + 1)), []);
  return html`<section>
    <h1>Live activity</h1>
    <p class="muted small">Newest first; ${seen.length} events since this page opened.</p>
    <ul class="list live" data-testid="live">
      ${seen
        .slice()
        .reverse()
        .map(
          (
            m,
          ) => html`<li class=${`ev ev-${String(m.event).replace(/\./g, '-')}`} data-event=${m.event} data-action=${m.data?.actionId ?? ''} data-host=${m.data?.host ?? ''}>
          <span class="badge">${m.event}</span>${m.data?.host ? html` <span class="muted small host">on ${m.data.host}</span>` : ''} <span class="text">${line(m)}</span></li>`,
        )}
    </ul>
  </section>`;
}
