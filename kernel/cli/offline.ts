/**
 * What the CLI knows without starting the kernel: every key from the kernel and from plugin manifests (no
 * plugin code runs), the merged configuration, and each plugin's state as it would start.
 */
import type { PluginManifest } from '../../sdk/types.js';
import { ConfigStore, KeyRegistry, KERNEL_KEYS } from '../config/index.js';
import { errorMessage } from '../errors.js';
import { discoverAll, type PluginCandidate } from '../plugins/discover.js';
import type { PluginStatus } from '../plugins/host.js';
import { permittedByLists, readPluginLists } from '../plugins/lists.js';
import { validateManifest } from '../plugins/manifest-schema.js';
import { PluginStateFile } from '../plugins/state-file.js';

export interface OfflineView {
  keys: KeyRegistry;
  config: ConfigStore;
  candidates: PluginCandidate[];
  manifests: Map<string, PluginManifest>;
  statuses: PluginStatus[];
}

export async function offlineView(home: string, configFile?: string): Promise<OfflineView> {
  const keys = new KeyRegistry();
  keys.register('kernel', KERNEL_KEYS);
  // Denied user plugin folders are listed without running their manifest module.
  const candidates = await discoverAll({ home, lists: await readPluginLists(home, configFile) });
  const manifests = new Map<string, PluginManifest>();
  const problems = new Map<string, string>();
  for (const c of candidates) {
    if (c.disabled) continue;
    if (c.error) {
      problems.set(c.id, c.error);
      continue;
    }
    try {
      const m = validateManifest(c.manifest, c.dir);
      if (manifests.has(m.id)) {
        problems.set(`${m.id}@${c.dir}`, `duplicate plugin id "${m.id}"`);
        continue;
      }
      if (m.config || m.channel) keys.register(m.id, m.config ?? {}, m.channel);
      manifests.set(m.id, m);
    } catch (e) {
      problems.set(c.id, errorMessage(e));
    }
  }
  const config = await ConfigStore.load({ home, ...(configFile ? { file: configFile } : {}), env: process.env, registry: keys });
  const quarantine = new PluginStateFile(home);
  const statuses: PluginStatus[] = [];
  for (const c of candidates) {
    const m = manifests.get(c.id);
    const base = { id: c.id, origin: c.origin, skills: (m?.skills ?? []).map((s) => s.name), failures: quarantine.failures(c.id) };
    if (c.disabled) {
      statuses.push({ ...base, state: 'disabled', reason: c.disabled });
      continue;
    }
    if (!m || problems.has(c.id)) {
      statuses.push({ ...base, state: 'invalid', reason: problems.get(c.id) ?? 'invalid manifest' });
      continue;
    }
    const info = { version: m.version, kind: m.kind, description: m.description };
    const lists = permittedByLists(m.id, config.get<string[]>('pluginAllowList'), config.get<string[]>('pluginDenyList'));
    const q = quarantine.quarantine(m.id);
    if (!lists.ok) statuses.push({ ...base, ...info, state: 'disabled', reason: lists.reason! });
    else if (q) statuses.push({ ...base, ...info, state: 'quarantined', reason: q.reason });
    else statuses.push({ ...base, ...info, state: 'stopped', reason: 'will load when Keel runs' });
  }
  return { keys, config, candidates, manifests, statuses };
}
