/**
 * Skills: each with its schema-generated form and an execute button; admin-only and dangerous ones marked, and one
 * that cannot work yet says what it needs ("needs searchAApiKey or searchBApiKey").
 */
import { useState } from 'preact/hooks';
import { runSkill } from '../api.js';
import { html, useApi, Err, Loading } from '../ui.js';
import { readArgs, SchemaFields } from './schema-form.js';

function Skill({ name }: { name: string }) {
  const { data: s, error } = useApi<any>(`/api/skills/${encodeURIComponent(name)}`);
  const [out, setOut] = useState<{ ok: boolean; text: string } | null>(null);
  if (!s) return html`<${Err} error=${error} /><${Loading} />`;
  const submit = async (e: Event) => {
    e.preventDefault();
    try {
      const args = readArgs(e.currentTarget as HTMLFormElement, s.parameters);
      if (s.isDangerous && !confirm(`${name} is marked dangerous. Run it?`)) return;
      setOut({ ok: true, text: await runSkill(name, args) });
    } catch (x) {
      setOut({ ok: false, text: (x as Error).message });
    }
  };
  return html`<form class="stack" onSubmit=${submit}>
    <${SchemaFields} schema=${s.parameters} />
    <button type="submit">Execute ${name}</button>
    ${out ? html`<pre class=${out.ok ? 'result' : 'error'}>${out.text}</pre>` : null}
  </form>`;
}

export function Skills() {
  const { data, error } = useApi<any>('/api/skills');
  const [open, setOpen] = useState<string | null>(null);
  const [filter, setFilter] = useState('');
  if (!data) return html`<${Err} error=${error} /><${Loading} />`;
  const list = data.skills.filter((s: any) => !filter || s.name.includes(filter) || s.category.includes(filter));
  return html`<section>
    <h1>Skills</h1>
    <input placeholder="Filter" value=${filter} onInput=${(e: any) => setFilter(e.currentTarget.value)} />
    <ul class="list">
      ${list.map(
        (s: any) => html`<li class="card" data-testid="skill">
          <div class="row"><button class="link" onClick=${() => setOpen(open === s.name ? null : s.name)}>${s.name}</button>
            <span class="badge">${s.category}</span>
            ${/adminOnly: true/.test(s.description) ? html`<span class="badge admin">admin only</span>` : null}
            ${/isDangerous: true/.test(s.description) ? html`<span class="badge danger">dangerous</span>` : null}
            ${s.needs ? html`<span class="badge warn" data-testid="skill-needs" title="The agent is not offered this skill until then">${s.needs}</span>` : null}</div>
          <div class="small muted">${s.description.replace(/\s*\[isDeep:[^\]]*\]$/, '')}</div>
          <div class="row">${['isDeep', 'isResearch', 'isParallelSafe'].filter((f) => new RegExp(`${f}: true`).test(s.description)).map((f) => html`<span class="badge">${f}</span>`)}</div>
          ${open === s.name ? html`<${Skill} name=${s.name} />` : null}
        </li>`,
      )}
    </ul>
  </section>`;
}
