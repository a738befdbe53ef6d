/**
 * Configuration: every key with type, default, source and policy class (secrets masked); edits through
 * PUT /api/config/:key (the gateway applies the same policy as there); pending approvals approved or rejected.
 */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { html, useApi, Err, Loading, show } from '../ui.js';

/** A typed value from the text field: JSON when it parses, the text itself otherwise. */
function parseValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function KeyRow({ k, onDone }: { k: any; onDone: () => void }) {
  const [edit, setEdit] = useState(false);
  const [text, setText] = useState(k.secret ? '' : show(k.value));
  const [out, setOut] = useState<{ ok: boolean; text: string } | null>(null);
  const save = async (e: Event) => {
    e.preventDefault();
    try {
      const r = await api(`/api/config/${encodeURIComponent(k.key)}`, { method: 'PUT', body: { value: parseValue(text) } });
      setOut({ ok: true, text: r.message });
      setEdit(false);
      onDone();
    } catch (x) {
      setOut({ ok: false, text: (x as Error).message });
    }
  };
  return html`<tr data-key=${k.key}>
    <td><code>${k.key}</code><div class="small muted">${k.owner}</div></td>
    <td class="small">${k.type}</td>
    <td><span class=${`badge policy-${k.policy}`}>${k.policy}</span>${k.secret ? html` <span class="badge">secret</span>` : null}</td>
    <td class="small"><code>${show(k.value)}</code><div class="muted">default ${k.secret ? '—' : show(k.default) || '—'} · ${k.source}</div></td>
    <td>
      ${
        edit
          ? html`<form class="row" onSubmit=${save}><input name="value" value=${text} onInput=${(e: any) => setText(e.currentTarget.value)} /><button type="submit">Save</button></form>`
          : html`<button class="small" onClick=${() => setEdit(true)}>Edit</button>`
      }
      ${out ? html`<div class=${out.ok ? 'ok' : 'error'} role="alert">${out.text}</div>` : null}
    </td>
  </tr>`;
}

function Pending() {
  const { data, reload } = useApi<any>('/api/config/pending', { refreshOn: (m) => m.type === 'event' && m.event === 'config.changed' });
  const [err, setErr] = useState<string | null>(null);
  const act = async (id: string, what: 'approve' | 'reject') => {
    try {
      await api(`/api/config/pending/${id}/${what}`, { method: 'POST' });
      reload();
    } catch (x) {
      setErr((x as Error).message);
    }
  };
  if (!data?.pending?.length) return html`<p class="muted">No pending approvals.</p>`;
  return html`<${Err} error=${err} /><ul class="list">
    ${data.pending.map(
      (
        p: any,
      ) => html`<li class="card"><code>${p.key}</code> → <code>${show(p.value)}</code> <span class="muted small">${p.reason ?? ''}</span>
        <button class="small" onClick=${() => act(p.id, 'approve')}>Approve</button> <button class="small" onClick=${() => act(p.id, 'reject')}>Reject</button></li>`,
    )}
  </ul>`;
}

export function Config() {
  const { data, error, reload } = useApi<any>('/api/config/keys');
  const [filter, setFilter] = useState('');
  if (!data) return html`<${Err} error=${error} /><${Loading} />`;
  const keys = data.keys.filter((k: any) => !filter || k.key.toLowerCase().includes(filter.toLowerCase()) || k.owner.includes(filter));
  return html`<section>
    <h1>Configuration</h1>
    <h2>Pending approvals</h2>
    <${Pending} />
    <h2>Keys</h2>
    <input placeholder="Filter keys" value=${filter} onInput=${(e: any) => setFilter(e.currentTarget.value)} />
    <div class="scroll"><table class="keys">
      <thead><tr><th>Key</th><th>Type</th><th>Policy</th><th>Value</th><th></th></tr></thead>
      <tbody>${keys.map((k: any) => html`<${KeyRow} key=${k.key} k=${k} onDone=${reload} />`)}</tbody>
    </table></div>
  </section>`;
}
