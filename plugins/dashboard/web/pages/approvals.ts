/**
 * Approvals: the requests waiting for a human (a command waiting for confirmation, an APPROVAL configuration change
 * the agent asked for; docs/approvals.md) with Approve / Refuse, then the recently decided ones. A button calls
 * POST /api/approvals/:id/approve|refuse, which only the operator may (the gateway key, or loopback without one):
 * anyone else is shown the gateway's refusal and nothing changes. Refreshed on `approval.*` events.
 */
import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Err, fmtTime, html, Loading, useApi } from '../ui.js';

interface Request {
  id: string;
  kind: string;
  ask: string;
  state: 'pending' | 'approved' | 'refused' | 'expired';
  origin: { channel: string; chatId?: string };
  requestedAt: string;
  expiresAt: string;
  requestedBy?: { kind?: string; channel?: string; userId?: string };
  decidedBy?: string;
  decidedAt?: string;
  outcome?: string;
}

const STATE_BADGE: Record<Request['state'], string> = { pending: 'warn', approved: 'good', refused: 'danger', expired: 'muted' };

export function Approvals() {
  const { data, error, reload } = useApi<{ approvals: Request[] }>('/api/approvals', {
    refreshOn: (m) => m.type === 'event' && typeof m.event === 'string' && m.event.startsWith('approval.'),
    // Expiry happens on the server's clock: a pending request that ran out shows as expired within a minute.
    poll: 60_000,
  });
  const [busy, setBusy] = useState<string | null>(null);
  const [out, setOut] = useState<{ ok: boolean; text: string } | null>(null);
  if (!data) return html`<${Err} error=${error} /><${Loading} />`;
  const decide = async (id: string, decision: 'approve' | 'refuse') => {
    setBusy(id);
    setOut(null);
    try {
      const r = await api<{ message: string }>(`/api/approvals/${encodeURIComponent(id)}/${decision}`, { method: 'POST' });
      setOut({ ok: true, text: r.message });
    } catch (x) {
      setOut({ ok: false, text: (x as Error).message });
    } finally {
      setBusy(null);
      reload();
    }
  };
  const pending = data.approvals.filter((r) => r.state === 'pending');
  const decided = data.approvals.filter((r) => r.state !== 'pending');
  const item = (r: Request) => html`<li class="card" data-testid="approval" data-id=${r.id} data-state=${r.state}>
    <div><span class=${`badge ${STATE_BADGE[r.state]}`}>${r.state}</span> <strong>${r.kind}</strong> <span class="small muted">${r.id}</span></div>
    <p data-testid="approval-ask">${r.ask}</p>
    <div class="small muted">from ${r.origin.channel}${r.origin.chatId ? ` (chat ${r.origin.chatId})` : ''}${r.requestedBy?.userId ? `, asked by ${r.requestedBy.userId}` : ''} · ${fmtTime(r.requestedAt)}${r.state === 'pending' ? ` · expires ${fmtTime(r.expiresAt)}` : ''}</div>
    ${r.state !== 'pending' ? html`<div class="small" data-testid="approval-outcome">${r.decidedBy ? `${r.state} by ${r.decidedBy}` : r.state}${r.decidedAt ? ` · ${fmtTime(r.decidedAt)}` : ''}${r.outcome ? html`<pre>${r.outcome}</pre>` : null}</div>` : null}
    ${
      r.state === 'pending'
        ? html`<div class="row"><button type="button" class="good" disabled=${busy === r.id} onClick=${() => decide(r.id, 'approve')}>Approve</button>
            <button type="button" class="danger" disabled=${busy === r.id} onClick=${() => decide(r.id, 'refuse')}>Refuse</button></div>`
        : null
    }
  </li>`;
  return html`<section>
    <h1>Approvals</h1>
    <p class="muted small">What the agent may not do on its own waits here and in the chat it came from, for a person to approve or refuse.</p>
    ${out ? html`<p class=${out.ok ? 'ok' : 'error'} role="alert" data-testid="approval-result">${out.text}</p>` : null}
    <h2>Waiting</h2>
    ${pending.length === 0 ? html`<p class="muted" data-testid="approvals-none">Nothing is waiting for approval.</p>` : html`<ul class="list">${pending.map(item)}</ul>`}
    ${decided.length ? html`<h2>Decided</h2><ul class="list">${decided.map(item)}</ul>` : null}
  </section>`;
}
