/**
 * The Overview's model panel: "Check the model" (POST /api/agent/probe: one short real call, the provider's answer
 * and what to change), and "Set up a model": a provider, its credentials and a model name saved through
 * PUT /api/config/:key (the same policy as the Configuration page), then checked at once. Open by itself while
 * queued tasks wait for a model.
 */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { html, useApi } from '../ui.js';

type Needs = 'key' | 'aws' | 'local';
/** The built-in providers (README: the names in the spec and the vendors behind them), with a model to start from. */
const PROVIDERS: Array<{ id: string; vendor: string; needs: Needs; example: string }> = [
  { id: 'providerA', vendor: 'OpenAI', needs: 'key', example: 'gpt-4o-mini' },
  { id: 'providerB', vendor: 'Google Gemini', needs: 'key', example: 'gemini-2.5-flash' },
  { id: 'providerC', vendor: 'Anthropic', needs: 'key', example: 'claude-sonnet-4-5' },
  { id: 'providerD', vendor: 'AWS Bedrock', needs: 'aws', example: 'anthropic.claude-3-haiku-20240307-v1:0' },
  { id: 'providerE', vendor: 'OpenRouter', needs: 'key', example: 'openai/gpt-4o-mini' },
  { id: 'providerF', vendor: 'NVIDIA NIM', needs: 'key', example: 'meta/llama-3.1-8b-instruct' },
  { id: 'providerG', vendor: 'Ollama (local)', needs: 'local', example: 'llama3.2:3b' },
  { id: 'providerH', vendor: 'Mistral', needs: 'key', example: 'mistral-small-latest' },
  { id: 'providerI', vendor: 'Groq', needs: 'key', example: 'llama-3.1-8b-instant' },
  { id: 'providerJ', vendor: 'xAI', needs: 'key', example: 'grok-3-mini' },
  { id: 'providerK', vendor: 'Cerebras', needs: 'key', example: 'llama3.1-8b' },
];

export interface Probe {
  ok: boolean;
  provider?: string;
  model?: string;
  ms?: number;
  reply?: string;
  status?: number;
  error?: string;
  fix?: string;
}

function ProbeResult({ p }: { p: Probe | 'running' | null }) {
  if (!p) return null;
  if (p === 'running') return html`<p class="muted" data-testid="probe-result">Calling the model…</p>`;
  if (p.ok)
    return html`<p class="ok" data-testid="probe-result">${p.model} on ${p.provider} answered in ${p.ms} ms${p.reply ? `: “${p.reply}”` : ''}.</p>`;
  return html`<div class="error" role="alert" data-testid="probe-result">
    <div>The model check failed${p.model ? ` (${p.model}${p.provider ? ` on ${p.provider}` : ''})` : ''}: ${p.error}</div>
    ${p.fix ? html`<div><strong>Fix:</strong> ${p.fix}</div>` : null}
  </div>`;
}

/** A config key as GET /api/config/keys gives it. */
interface KeyInfo {
  key: string;
  source?: string;
  value?: unknown;
}

function Setup({ current, onSaved }: { current?: string; onSaved: (p: Probe) => void }) {
  const { data } = useApi<{ keys: KeyInfo[] }>('/api/config/keys');
  const [provider, setProvider] = useState(current && PROVIDERS.some((p) => p.id === current) ? current : 'providerA');
  const [fields, setFields] = useState<Record<string, string>>({});
  const [model, setModel] = useState('');
  const [err, setErr] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const spec = PROVIDERS.find((p) => p.id === provider)!;
  const keys = new Map((data?.keys ?? []).map((k) => [k.key, k]));
  const isSet = (key: string) => {
    const k = keys.get(key);
    return !!k && k.source !== 'default' && k.value !== undefined && k.value !== '';
  };
  const field = (key: string, label: string, o: { secret?: boolean; placeholder?: string } = {}) => {
    const already = isSet(key);
    return html`<label>${label} <span class="muted small">(${key})</span>
      <input name=${key} type=${o.secret ? 'password' : 'text'} autocomplete="off" spellcheck=${false}
        placeholder=${already ? (o.secret ? 'set: leave empty to keep it' : String(keys.get(key)?.value ?? '')) : (o.placeholder ?? '')}
        value=${fields[key] ?? ''} onInput=${(e: any) => setFields({ ...fields, [key]: e.currentTarget.value })} /></label>`;
  };
  const save = async (e: Event) => {
    e.preventDefault();
    setErr(null);
    const name = model.trim() || spec.example;
    const changes: Array<[string, unknown]> = [];
    for (const [k, v] of Object.entries(fields)) if (v.trim() && keys.has(k) && k.startsWith(provider)) changes.push([k, v.trim()]);
    if (data && spec.needs !== 'local' && !keys.has(spec.needs === 'aws' ? 'providerDAccessKeyId' : `${provider}ApiKey`)) {
      setErr(`${provider} is not loaded in this Keel (see Plugins: the plugin lists may keep it out).`);
      return;
    }
    if (spec.needs === 'key' && !isSet(`${provider}ApiKey`) && !fields[`${provider}ApiKey`]?.trim()) {
      setErr(`${spec.vendor} needs an API key (${provider}ApiKey).`);
      return;
    }
    if (spec.needs === 'local') changes.push(['providerGEnabled', true]);
    changes.push(['llmProvider', provider], ['modelName', name]);
    setBusy(true);
    try {
      for (const [k, v] of changes) {
        const r = await api<{ success: boolean; message: string }>(`/api/config/${encodeURIComponent(k)}`, {
          method: 'PUT',
          body: { value: v },
        });
        if (!r.success) throw new Error(`${k}: ${r.message}`);
      }
      setFields({});
      onSaved(await api<Probe>('/api/agent/probe', { method: 'POST' }));
    } catch (x) {
      setErr((x as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="stack" data-testid="model-setup" onSubmit=${save}>
    <label>Provider
      <select name="provider" value=${provider} onChange=${(e: any) => setProvider(e.currentTarget.value)}>
        ${PROVIDERS.map((p) => html`<option value=${p.id}>${p.vendor} (${p.id})</option>`)}
      </select></label>
    ${spec.needs === 'key' ? field(`${provider}ApiKey`, 'API key', { secret: true }) : null}
    ${
      spec.needs === 'aws'
        ? html`${field('providerDAccessKeyId', 'Access key id', { secret: true })}${field('providerDSecretAccessKey', 'Secret access key', { secret: true })}${field('providerDRegion', 'Region', { placeholder: 'us-east-1' })}`
        : null
    }
    ${spec.needs === 'local' ? field('providerGApiUrl', 'Ollama server', { placeholder: 'http://127.0.0.1:11434' }) : null}
    <label>Model <input name="model" autocomplete="off" spellcheck=${false} placeholder=${spec.example} value=${model} onInput=${(e: any) => setModel(e.currentTarget.value)} /></label>
    <div class="row"><button type="submit" disabled=${busy}>${busy ? 'Saving…' : 'Save and check'}</button>
      <span class="muted small">Keys are stored in keel.config.yaml (mode 0600) and never shown again.</span></div>
    ${err ? html`<p class="error" role="alert">${err}</p>` : null}
  </form>`;
}

/** The model panel of the Overview. `needsSetup`: queued tasks wait for a model (the form opens by itself). */
export function ModelPanel({ provider, needsSetup, onChange }: { provider?: string; needsSetup: boolean; onChange: () => void }) {
  const [probe, setProbe] = useState<Probe | 'running' | null>(null);
  const [open, setOpen] = useState(false);
  const check = async () => {
    setProbe('running');
    try {
      setProbe(await api<Probe>('/api/agent/probe', { method: 'POST' }));
    } catch (x) {
      setProbe({ ok: false, error: (x as Error).message });
    }
  };
  const showForm = open || needsSetup;
  return html`<div class="card stack" data-testid="model-panel">
    <div class="row">
      <button type="button" class="small" onClick=${check} disabled=${probe === 'running'}>Check the model</button>
      ${needsSetup ? html`<strong>Set up a model</strong>` : html`<button type="button" class="link small" onClick=${() => setOpen(!open)}>${open ? 'Close' : 'Change the model'}</button>`}
    </div>
    <${ProbeResult} p=${probe} />
    ${
      showForm
        ? html`<${Setup} current=${provider} onSaved=${(p: Probe) => {
            setProbe(p);
            if (p.ok) setOpen(false);
            onChange();
          }} />`
        : null
    }
  </div>`;
}
