/**
 * Manifests for listing commands, read as plain JSON: dist/plugins/manifests.json for built-ins and
 * manifest.json of user plugins. No plugin code, no TypeBox, no ajv: `keel --help` must stay fast.
 * (In a source checkout without dist/, built-in manifests are not listed in --help.)
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PluginManifest } from '../../sdk/types.js';
import { keelHome } from '../paths.js';

function distDir(): string | undefined {
  // In the bundle this module lives in dist/ or dist/chunks/.
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 3; i++) {
    if (existsSync(join(dir, 'plugins', 'manifests.json'))) return dir;
    dir = dirname(dir);
  }
  return undefined;
}

export function lightManifests(): Array<{ dir: string; manifest: PluginManifest }> {
  const out: Array<{ dir: string; manifest: PluginManifest }> = [];
  const dist = distDir();
  if (dist) {
    try {
      out.push(
        ...(JSON.parse(readFileSync(join(dist, 'plugins', 'manifests.json'), 'utf8')) as Array<{ dir: string; manifest: PluginManifest }>),
      );
    } catch {
      // A damaged build only hides plugin commands from --help; `keel plugins` reports the problem.
    }
  }
  const user = join(keelHome(), 'plugins');
  if (existsSync(user)) {
    for (const d of readdirSync(user)) {
      const f = join(user, d, 'manifest.json');
      if (!existsSync(f)) continue;
      try {
        out.push({ dir: join(user, d), manifest: JSON.parse(readFileSync(f, 'utf8')) as PluginManifest });
      } catch {
        // Reported by `keel plugins`.
      }
    }
  }
  return out;
}

export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    const p = join(dir, 'package.json');
    if (existsSync(p)) return (JSON.parse(readFileSync(p, 'utf8')) as { version: string }).version;
    dir = dirname(dir);
  }
  return '0.0.0';
}
