/**
 * Start order from requires/provides. A cycle or a missing requirement refuses the plugins involved with a
 * coded error; nothing is guessed. Ties keep the given order.
 */
import type { PluginManifest } from '../../sdk/types.js';
import { ErrorCodes, type ErrorCode } from '../errors.js';

export interface Refusal {
  id: string;
  code: ErrorCode;
  reason: string;
}

export function orderPlugins(
  manifests: PluginManifest[],
  /** Capabilities already satisfied outside this set (plugins already running). */
  satisfied: (capability: string) => boolean = () => false,
): { ordered: PluginManifest[]; refused: Refusal[] } {
  const byId = new Map(manifests.map((m) => [m.id, m]));
  const providers = new Map<string, string[]>();
  for (const m of manifests) {
    for (const cap of [m.id, ...(m.provides ?? [])]) providers.set(cap, [...(providers.get(cap) ?? []), m.id]);
  }
  const refused = new Map<string, Refusal>();

  // Missing requirements, propagated: a plugin needing a refused plugin is refused too.
  let changed = true;
  while (changed) {
    changed = false;
    for (const m of manifests) {
      if (refused.has(m.id)) continue;
      for (const req of m.requires ?? []) {
        const provs = (providers.get(req) ?? []).filter((p) => !refused.has(p));
        if (provs.length === 0 && !satisfied(req)) {
          refused.set(m.id, {
            id: m.id,
            code: ErrorCodes.PLUGIN_MISSING_REQUIREMENT,
            reason: `plugin "${m.id}" requires "${req}", which no enabled plugin provides`,
          });
          changed = true;
          break;
        }
      }
    }
  }

  const ordered: PluginManifest[] = [];
  const mark = new Map<string, 'visiting' | 'done'>();
  const visit = (id: string, path: string[]): void => {
    if (refused.has(id) || mark.get(id) === 'done') return;
    if (mark.get(id) === 'visiting') {
      const cycle = [...path.slice(path.indexOf(id)), id];
      for (const c of cycle) {
        refused.set(c, { id: c, code: ErrorCodes.PLUGIN_CYCLE, reason: `dependency cycle: ${cycle.join(' -> ')}` });
      }
      return;
    }
    mark.set(id, 'visiting');
    const m = byId.get(id)!;
    for (const req of m.requires ?? []) {
      for (const p of providers.get(req) ?? []) if (p !== id) visit(p, [...path, id]);
    }
    mark.set(id, 'done');
    if (!refused.has(id)) ordered.push(m);
  };
  for (const m of manifests) visit(m.id, []);
  // A plugin ordered before a cycle member was refused still depends on it.
  const final = ordered.filter(
    (m) => !refused.has(m.id) && (m.requires ?? []).every((r) => satisfied(r) || (providers.get(r) ?? []).some((p) => !refused.has(p))),
  );
  for (const m of ordered) {
    if (!final.includes(m) && !refused.has(m.id)) {
      refused.set(m.id, {
        id: m.id,
        code: ErrorCodes.PLUGIN_MISSING_REQUIREMENT,
        reason: `plugin "${m.id}" requires a plugin that was refused`,
      });
    }
  }
  return { ordered: final, refused: [...refused.values()] };
}
