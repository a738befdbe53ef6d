/** Plugins: state, quarantine, enable. */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { html, useApi, Err, Loading } from '../ui.js';

export function Plugins() {
  const { data, error, reload } = useApi<any>('/api/plugins', {
    refreshOn: (m) => m.type === 'event' && String(m.event).startsWith('plugin.'),
  });
  const [out, setOut] = useState<string | null>(null);
  if (!data) return html`<${Err} error=${error} /><${Loading} />`;
  const enable = async (id: string) => {
    try {
      setOut((await api(`/api/plugins/${encodeURIComponent(id)}/enable`, { method: 'POST' })).message);
      reload();
    } catch (x) {
      setOut((x as Error).message);
    }
  };
  return html`<section>
    <h1>Plugins</h1>
    ${out ? html`<p role="status">${out}</p>` : null}
    <ul class="list">
      ${data.plugins.map(
        (
          p: any,
        ) => html`<li class="card" data-plugin=${p.id}><strong>${p.id}</strong> <span class=${`badge state-${p.state}`}>${p.state}</span> ${p.kind ? html`<span class="badge">${p.kind}</span>` : null}
          ${p.reason ? html`<div class="small muted">${p.reason}</div>` : null}
          ${p.state === 'quarantined' || p.state === 'failed' ? html`<button class="small" onClick=${() => enable(p.id)}>Enable</button>` : null}</li>`,
      )}
    </ul>
  </section>`;
}
