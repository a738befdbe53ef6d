/** Memory: browse by kind, search. */
import { useState } from 'preact/hooks';
import { html, useApi, Err, fmtTime } from '../ui.js';

export function Memory() {
  const [type, setType] = useState('');
  const [search, setSearch] = useState('');
  const q = new URLSearchParams({ limit: '100', ...(type ? { type } : {}), ...(search ? { search } : {}) });
  const { data, error } = useApi<any>(`/api/memory?${q}`);
  return html`<section>
    <h1>Memory</h1>
    <div class="row">
      <select value=${type} onChange=${(e: any) => setType(e.currentTarget.value)}>
        <option value="">all kinds</option><option value="short">short</option><option value="episodic">episodic</option><option value="long">long</option>
      </select>
      <input placeholder="Search" value=${search} onChange=${(e: any) => setSearch(e.currentTarget.value)} />
    </div>
    <${Err} error=${error} />
    <p class="muted small">${data ? `${data.total} entries` : ''}</p>
    <ul class="list">${(data?.memories ?? []).map((m: any) => html`<li class="card"><span class="badge">${m.type}</span> ${m.content}<div class="small muted">${fmtTime(m.timestamp)}</div></li>`)}</ul>
  </section>`;
}
