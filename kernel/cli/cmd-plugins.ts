/**
 * `keel plugins`: each plugin's state. Live states come from the running agent; otherwise the state it would
 * start in (disabled by list, quarantined, invalid, or "stopped: will load").
 */
import { keelHome } from '../paths.js';
import { PluginStateFile } from '../plugins/state-file.js';
import { livePids } from '../util/pidfiles.js';
import { offlineView } from './offline.js';
import { readRunState } from './run-state.js';

export async function listPlugins(opts: { json?: boolean; config?: string }): Promise<number> {
  const home = keelHome();
  const live = livePids(home).some((p) => p.name === 'agent') ? readRunState(home)?.plugins : undefined;
  const statuses = live ?? (await offlineView(home, opts.config)).statuses;
  if (opts.json) {
    process.stdout.write(`${JSON.stringify({ live: Boolean(live), plugins: statuses }, null, 2)}\n`);
    return 0;
  }
  if (statuses.length === 0) {
    process.stdout.write(`No plugins found (built-ins, or ${home}/plugins).\n`);
    return 0;
  }
  for (const s of statuses) {
    const state = s.state === 'stopped' && !live ? 'enabled' : s.state;
    process.stdout.write(
      `${s.id.padEnd(24)} ${state.padEnd(12)} ${s.origin.padEnd(12)} ${s.version ?? ''}${s.reason && state !== 'enabled' ? `  ${s.reason}` : ''}\n`,
    );
  }
  return 0;
}

export async function enablePlugin(id: string): Promise<number> {
  const file = new PluginStateFile(keelHome());
  if (!file.quarantine(id)) {
    process.stdout.write(`Plugin ${id} is not quarantined.\n`);
    return 0;
  }
  file.clearQuarantine(id);
  process.stdout.write(`Lifted the quarantine of ${id}; it loads on the next start of \`keel run\`.\n`);
  return 0;
}
