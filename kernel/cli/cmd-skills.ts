/**
 * `keel skills`: skills from manifests of enabled plugins (live from the running agent when there is one,
 * which includes custom skills).
 */
import { keelHome } from '../paths.js';
import { livePids } from '../util/pidfiles.js';
import { offlineView } from './offline.js';
import { readRunState } from './run-state.js';

export async function listSkills(opts: { json?: boolean; config?: string }): Promise<number> {
  const home = keelHome();
  let skills = livePids(home).some((p) => p.name === 'agent') ? readRunState(home)?.skills : undefined;
  if (!skills) {
    const view = await offlineView(home, opts.config);
    const enabled = new Set(view.statuses.filter((s) => s.state === 'stopped').map((s) => s.id));
    skills = [...view.manifests.values()]
      .filter((m) => enabled.has(m.id))
      .flatMap((m) => (m.skills ?? []).map((s) => ({ name: s.name, plugin: m.id, category: s.category, description: s.description })));
  }
  skills.sort((a, b) => a.name.localeCompare(b.name));
  if (opts.json) process.stdout.write(`${JSON.stringify({ skills }, null, 2)}\n`);
  else if (skills.length === 0) process.stdout.write('No skills available.\n');
  else
    for (const s of skills) process.stdout.write(`${s.name.padEnd(28)} ${s.category.padEnd(10)} ${s.plugin.padEnd(16)} ${s.description}\n`);
  return 0;
}
