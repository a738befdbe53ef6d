/**
 * pluginAllowList / pluginDenyList. They are applied twice: by folder (or skill file) name before any code of a
 * user plugin runs, its manifest.ts included, and by manifest id when the manifest is read. Deny wins; a
 * non-empty allow list admits only the names it lists.
 */
import { ConfigStore, KeyRegistry, KERNEL_KEYS } from '../config/index.js';

export interface PluginLists {
  allow?: string[];
  deny?: string[];
}

/** Whether a plugin id passes the allow/deny lists: deny wins; a non-empty allow list admits only its names. */
export function permittedByLists(id: string, allow: string[] = [], deny: string[] = []): { ok: boolean; reason?: string } {
  if (deny.includes(id)) return { ok: false, reason: `"${id}" is on pluginDenyList` };
  if (allow.length > 0 && !allow.includes(id)) return { ok: false, reason: `pluginAllowList is set and does not name "${id}"` };
  return { ok: true };
}

/**
 * The lists as configured (file, environment), read without any plugin: for the CLI paths that discover plugins
 * before a kernel exists. Only kernel keys are declared, so nothing is reported about plugin keys here.
 */
export async function readPluginLists(home: string, configFile?: string, env: NodeJS.ProcessEnv = process.env): Promise<PluginLists> {
  const keys = new KeyRegistry();
  keys.register('kernel', KERNEL_KEYS);
  const config = await ConfigStore.load({ home, ...(configFile ? { file: configFile } : {}), env, registry: keys });
  return { allow: config.get<string[]>('pluginAllowList') ?? [], deny: config.get<string[]>('pluginDenyList') ?? [] };
}
