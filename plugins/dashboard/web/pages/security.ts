/** Security settings: safe mode, admin users, plugin lists (PUT /api/security). */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { html, useApi, Err, Loading } from '../ui.js';

const lines = (s: string) =>
  s
    .split('\n')
    .map((x) => x.trim())
    .filter(Boolean);

export function Security() {
  const { data, error, reload } = useApi<any>('/api/security');
  const [out, setOut] = useState<{ ok: boolean; text: string } | null>(null);
  if (!data) return html`<${Err} error=${error} /><${Loading} />`;
  const save = async (e: Event) => {
    e.preventDefault();
    const f = e.currentTarget as HTMLFormElement;
    const v = (n: string) => (f.elements.namedItem(n) as HTMLTextAreaElement).value;
    try {
      const r = await api('/api/security', {
        method: 'PUT',
        body: {
          safeMode: (f.elements.namedItem('safeMode') as HTMLInputElement).checked,
          adminUsers: lines(v('adminUsers')),
          pluginAllowList: lines(v('pluginAllowList')),
          pluginDenyList: lines(v('pluginDenyList')),
        },
      });
      setOut({ ok: true, text: r.message });
      reload();
    } catch (x) {
      setOut({ ok: false, text: (x as Error).message });
    }
  };
  return html`<section>
    <h1>Security</h1>
    <p>API key: <strong>${data.apiKeySet ? 'set' : 'not set'}</strong></p>
    <form class="stack" onSubmit=${save}>
      <label class="check"><input type="checkbox" name="safeMode" checked=${data.safeMode} /> Safe mode (blocks run_command and create_custom_skill)</label>
      <label>Admin users, one "channel:id" per line <textarea name="adminUsers" rows="3">${data.adminUsers.join('\n')}</textarea></label>
      <label>Plugin allow list <textarea name="pluginAllowList" rows="2">${data.pluginAllowList.join('\n')}</textarea></label>
      <label>Plugin deny list <textarea name="pluginDenyList" rows="2">${data.pluginDenyList.join('\n')}</textarea></label>
      <button type="submit">Save</button>
    </form>
    ${out ? html`<p class=${out.ok ? 'ok' : 'error'} role="alert">${out.text}</p>` : null}
  </section>`;
}
