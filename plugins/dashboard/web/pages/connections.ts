/** Connections: each channel's status and health. */
import { html, useApi, Err, Loading } from '../ui.js';

export function Connections() {
  const { data, error } = useApi<any>('/api/connections', { poll: 5000 });
  if (!data) return html`<${Err} error=${error} /><${Loading} />`;
  const names = Object.keys(data);
  return html`<section>
    <h1>Connections</h1>
    ${names.length === 0 ? html`<p class="muted">No channel is running.</p>` : null}
    <ul class="list">
      ${names.map((n) => {
        const s = data[n];
        return html`<li class="card" data-channel=${n}><strong>${n}</strong> <span class=${`badge ${s.connected ? 'good' : 'danger'}`}>${s.state ?? (s.connected ? 'connected' : 'not connected')}</span>
          <div class="small muted">${s.botUsername ? `as ${s.botUsername} · ` : ''}${typeof s.guilds === 'number' ? `${s.guilds} ${s.guilds === 1 ? 'server' : 'servers'} · ` : ''}${s.lastInboundAt ? `last message ${s.lastInboundAt} · ` : ''}${s.reconnects ? `${s.reconnects} reconnects · ` : ''}${s.caughtUp ? `${s.caughtUp} read from the history · ` : ''}${s.waitingForScan ? (s.pairingCode ? `not linked: enter ${s.pairingCode} on the phone (Link with phone number) · ` : 'not linked: scan the QR code shown in the terminal Keel runs in · ') : ''}${s.lastError ?? ''}</div></li>`;
      })}
    </ul>
  </section>`;
}
