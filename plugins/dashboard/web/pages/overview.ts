/** Overview: agent state, model and provider, queue counts, autonomy, version. */
import { html, isActionEvent, useApi, Err, Loading } from '../ui.js';
import { ModelPanel } from './model.js';

export function Overview() {
  const { data: s, error, reload } = useApi<any>('/api/status', { refreshOn: isActionEvent });
  const { data: tasks } = useApi<any>('/api/tasks', { refreshOn: isActionEvent });
  const { data: ready, reload: reloadReady } = useApi<any>('/api/agent/readiness', { refreshOn: isActionEvent, poll: 5000 });
  if (!s) return html`<${Err} error=${error} /><${Loading} />`;
  const waiting = ready && !ready.ready ? `Queued tasks wait: ${ready.reason ?? 'the agent is not ready'}.` : null;
  // The agent runs but has no usable model (the agent's only reason not to be ready): the setup form opens itself.
  const needsSetup = !!ready && !ready.ready && ready.running && !/no agent plugin/.test(ready.reason ?? '');
  return html`<section>
    <h1>Overview</h1>
    <${Err} error=${error} />
    ${waiting ? html`<p class="warn" data-testid="why-waiting">${waiting}</p>` : null}
    <dl class="grid">
      <dt>Agent</dt><dd data-testid="agent-state">${s.running ? 'running' : 'stopped'}</dd>
      <dt>Now</dt><dd>${ready?.current ?? 'idle'}</dd>
      <dt>Model</dt><dd>${s.model || '(none)'}</dd>
      <dt>Provider</dt><dd>${s.provider || '(none)'}</dd>
      <dt>Pending</dt><dd>${s.queue.pending}</dd>
      <dt>Failed</dt><dd>${s.queue.failed}</dd>
      <dt>Completed</dt><dd>${tasks ? tasks.completed.length : '…'}</dd>
      <dt>Autonomy</dt><dd>${s.autonomy.enabled ? `on, every ${Math.round(s.autonomy.interval / 1000)} s` : 'off'}</dd>
      <dt>Safe mode</dt><dd>${s.safeMode ? 'on' : 'off'}</dd>
      <dt>Memory</dt><dd>${s.memory.short} short, ${s.memory.episodic} episodic, ${s.memory.long} long</dd>
      <dt>Version</dt><dd>${s.version}</dd>
    </dl>
    <h2>Model</h2>
    <${ModelPanel} provider=${s.provider} needsSetup=${needsSetup} onChange=${() => {
      reload();
      reloadReady();
    }} />
  </section>`;
}
