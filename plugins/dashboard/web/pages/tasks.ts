/** Tasks: pending in run order, completed with results, failed with reasons; push with a priority; cancel. */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { html, isActionEvent, useApi, Err, fmtTime } from '../ui.js';
import { Timeline } from './timeline.js';

/** The message a chat task replies to (metadata.quoted), shortened: whose, and whether the agent trusts it. */
function Quoted({ q }: { q: any }) {
  const who = q.fromBot ? 'Keel' : (q.userName ?? q.userId ?? 'unknown');
  const text = String(q.text ?? '');
  return html`<blockquote class="quoted small" data-testid="quoted">
    <span class="muted">${q.forwarded ? 'forwarded from' : 'replying to'} ${who}${q.trusted === true ? '' : ' (untrusted)'}:</span> ${text.length > 200 ? `${text.slice(0, 200)}…` : text}
  </blockquote>`;
}

function Row({ a, onCancel }: { a: any; onCancel?: (id: string) => void }) {
  const [open, setOpen] = useState(false);
  const quoted = a.metadata?.quoted;
  // Why privileged skills are refused to it: a non-admin sender, or a quote of someone who is not an admin.
  const untrusted = a.metadata?.untrusted === true || (quoted && quoted.trusted !== true);
  // An edited chat message: amended before it started, or asked again after the action that took up its earlier version.
  const edit = a.metadata?.edit;
  const editTitle = edit?.after
    ? `the message was edited after ${edit.after} took it up`
    : 'the message was edited before this task started';
  return html`<li class="card" data-testid="task" data-status=${a.status} data-action=${a.id}>
    <div class="row"><strong>${a.task}</strong><span class="badge">p${a.priority}</span><span class="badge">${a.status}</span>${
      untrusted ? html`<span class="badge danger" title="privileged skills are refused to this task">untrusted</span>` : null
    }${edit ? html`<span class="badge" data-testid="edited" title=${editTitle}>edited</span>` : null}</div>
    ${quoted ? html`<${Quoted} q=${quoted} />` : null}
    <div class="muted small">${a.id} · ${a.source} · ${fmtTime(a.createdAt)}</div>
    ${a.result ? html`<pre class="result">${a.result}</pre>` : null}
    ${a.error ? html`<pre class="error">${a.error}</pre>` : null}
    ${
      onCancel
        ? a.status === 'executing'
          ? html`<button class="small" title="stopped wherever it runs; it ends failed and is not retried" onClick=${() => onCancel(a.id)}>Stop</button>`
          : html`<button class="small" onClick=${() => onCancel(a.id)}>Cancel</button>`
        : null
    }
    <button class="small" aria-expanded=${open} onClick=${() => setOpen(!open)}>Timeline</button>
    ${open ? html`<${Timeline} id=${a.id} />` : null}
  </li>`;
}

export function Tasks() {
  const { data, error, reload } = useApi<any>('/api/tasks', { refreshOn: isActionEvent });
  const [task, setTask] = useState('');
  const [priority, setPriority] = useState(5);
  const [msg, setMsg] = useState<string | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const push = async (e: Event) => {
    e.preventDefault();
    try {
      const r = await api('/api/tasks', { method: 'POST', body: { task, priority } });
      setMsg(`${r.message} (${r.taskId})`);
      setErr(null);
      setTask('');
      reload();
    } catch (x) {
      setErr((x as Error).message);
    }
  };
  const cancel = async (id: string) => {
    try {
      setMsg((await api(`/api/tasks/${id}/cancel`, { method: 'POST' })).message);
      reload();
    } catch (x) {
      setErr((x as Error).message);
    }
  };
  return html`<section>
    <h1>Tasks</h1>
    <form class="stack" onSubmit=${push}>
      <label>Task <textarea name="task" required value=${task} onInput=${(e: any) => setTask(e.currentTarget.value)}></textarea></label>
      <label>Priority (1-10) <input name="priority" type="number" min="1" max="10" value=${priority} onInput=${(e: any) => setPriority(Number(e.currentTarget.value))} /></label>
      <button type="submit">Push task</button>
    </form>
    ${msg ? html`<p class="ok" role="status">${msg}</p>` : null}
    <${Err} error=${err ?? error} />
    <h2>Pending (run order)</h2>
    <ul class="list">${(data?.pending ?? []).map((a: any) => html`<${Row} a=${a} onCancel=${cancel} />`)}</ul>
    <h2>Completed</h2>
    <ul class="list">${(data?.completed ?? [])
      .slice()
      .reverse()
      .map((a: any) => html`<${Row} a=${a} />`)}</ul>
    <h2>Failed</h2>
    <ul class="list">${(data?.failed ?? [])
      .slice()
      .reverse()
      .map((a: any) => html`<${Row} a=${a} />`)}</ul>
  </section>`;
}
