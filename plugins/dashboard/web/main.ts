/**
 * The dashboard shell: asks for the gateway key once when the API wants one (kept in session storage, never in a
 * URL), shows the loud warning when the gateway is open beyond loopback without a key, and routes between pages by
 * the URL hash. One WebSocket for all pages; it resumes by seq without a reload.
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, setApiKey, stream } from './api.js';
import { Approvals } from './pages/approvals.js';
import { Chat } from './pages/chat.js';
import { Config } from './pages/config.js';
import { Connections } from './pages/connections.js';
import { Knowledge } from './pages/knowledge.js';
import { Live } from './pages/live.js';
import { Logs } from './pages/logs.js';
import { Memory } from './pages/memory.js';
import { Overview } from './pages/overview.js';
import { Plugins } from './pages/plugins.js';
import { Security } from './pages/security.js';
import { Skills } from './pages/skills.js';
import { Tasks } from './pages/tasks.js';
import { html } from './ui.js';

export const PAGES: Array<[string, string, () => unknown]> = [
  ['overview', 'Overview', Overview],
  ['tasks', 'Tasks', Tasks],
  ['live', 'Live', Live],
  ['chat', 'Chat', Chat],
  ['approvals', 'Approvals', Approvals],
  ['skills', 'Skills', Skills],
  ['memory', 'Memory', Memory],
  ['knowledge', 'Knowledge', Knowledge],
  ['config', 'Configuration', Config],
  ['security', 'Security', Security],
  ['connections', 'Connections', Connections],
  ['logs', 'Logs', Logs],
  ['plugins', 'Plugins', Plugins],
];

const LOOPBACK = /^(127\.|localhost$|\[::1\]$|::1$)/;

function useHash(): string {
  const [h, set] = useState(location.hash.replace(/^#\/?/, '') || 'overview');
  useEffect(() => {
    const on = () => set(location.hash.replace(/^#\/?/, '') || 'overview');
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return h;
}

function KeyPrompt({ onKey, wrong }: { onKey: () => void; wrong: boolean }) {
  const submit = (e: Event) => {
    e.preventDefault();
    setApiKey(((e.currentTarget as HTMLFormElement).elements.namedItem('key') as HTMLInputElement).value);
    onKey();
  };
  return html`<main class="login"><form class="stack" onSubmit=${submit}>
    <h1>Keel</h1>
    <p>This gateway needs its API key (gatewayApiKey). It is kept for this browser tab only.</p>
    ${wrong ? html`<p class="error" role="alert">That key was not accepted.</p>` : null}
    <label>API key <input name="key" type="password" autocomplete="current-password" required /></label>
    <button type="submit">Open the dashboard</button>
  </form></main>`;
}

function App() {
  const page = useHash();
  const [auth, setAuth] = useState<'checking' | 'ok' | 'need' | 'wrong'>('checking');
  const [exposed, setExposed] = useState(false);
  const [conn, setConn] = useState(stream.state);
  const check = () =>
    api('/api/security')
      .then(async (sec) => {
        setAuth('ok');
        const cfg = await api('/api/config').catch(() => ({}) as Record<string, unknown>);
        const host = String((cfg as Record<string, unknown>).gatewayHost ?? '');
        setExposed(!sec.apiKeySet && (!LOOPBACK.test(host) || !LOOPBACK.test(location.hostname)));
        if (stream.state !== 'open') stream.connect();
      })
      .catch((e) => setAuth(e instanceof ApiError && e.status === 401 ? (sessionStorage.getItem('keel.apiKey') ? 'wrong' : 'need') : 'ok'));
  // biome-ignore lint/correctness/useExhaustiveDependencies: once on mount: the key check and the stream state
  useEffect(() => {
    stream.onState = setConn;
    check();
  }, []);
  if (auth === 'checking') return html`<p class="muted">Connecting…</p>`;
  if (auth === 'need' || auth === 'wrong') return html`<${KeyPrompt} wrong=${auth === 'wrong'} onKey=${check} />`;
  const Page = (PAGES.find((p) => p[0] === page) ?? PAGES[0]!)[2] as () => unknown;
  return html`<div class="shell">
    ${
      exposed
        ? html`<div class="banner" role="alert" data-testid="exposed-warning">WARNING: this gateway has no API key and can be reached beyond this machine. Anyone who can reach it controls the agent: they can queue tasks, run skills (including commands) and read its memory and configuration. Set gatewayApiKey, or bind to 127.0.0.1.</div>`
        : null
    }
    <header><strong>Keel</strong><span class=${`dot ${conn}`} title=${`live stream: ${conn}`}></span>
      <nav>${PAGES.map(([id, label]) => html`<a href=${`#/${id}`} class=${id === page ? 'on' : ''}>${label}</a>`)}</nav></header>
    <main data-page=${page}><${Page} /></main>
  </div>`;
}

render(html`<${App} />`, document.getElementById('app')!);
