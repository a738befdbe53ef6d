/** Logs: a live tail (polled; warnings and errors also arrive on the stream) with a level filter. */
import { useState } from 'preact/hooks';
import { html, useApi, Err, fmtTime } from '../ui.js';

export function Logs() {
  const [level, setLevel] = useState('');
  const { data, error } = useApi<any>(`/api/logs?limit=200${level ? `&level=${level}` : ''}`, {
    poll: 2000,
    refreshOn: (m) => m.type === 'event' && m.event === 'log',
  });
  return html`<section>
    <h1>Logs</h1>
    <select value=${level} onChange=${(e: any) => setLevel(e.currentTarget.value)}>
      <option value="">info and above</option><option value="warn">warn and above</option><option value="error">errors</option>
    </select>
    <${Err} error=${error} />
    <ul class="list logs">${(data?.logs ?? [])
      .slice()
      .reverse()
      .map(
        (l: any) =>
          html`<li class=${`log log-${l.level}`}><span class="small muted">${fmtTime(l.timestamp)}</span> <span class="badge">${l.level}</span> ${l.message}</li>`,
      )}</ul>
  </section>`;
}
