/**
 * Finds plugins without running their code: built-ins (plugins/ or dist/plugins/manifests.json) and user
 * plugins ($KEEL_HOME/plugins/<folder>/ with manifest.json|.js|.ts and index.js|.ts).
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { PluginDefinition } from '../../sdk/plugin.js';
import type { PluginManifest } from '../../sdk/types.js';
import { ErrorCodes, KeelError, errorMessage } from '../errors.js';
import { installRoot, runningFromDist } from '../paths.js';
import { compileModule, pruneCompiled } from './compile.js';
import { permittedByLists, type PluginLists } from './lists.js';

export type PluginOrigin = 'builtin' | 'user' | 'custom-skill';

export interface PluginCandidate {
  /** The manifest's id, or the folder name when the manifest could not be read. */
  id: string;
  origin: PluginOrigin;
  dir: string;
  /** Raw manifest, validated by the host. Absent when it could not be read (see `error`). */
  manifest?: unknown;
  error?: string;
  /**
   * Why the allow/deny lists refused this plugin by its folder name, before any of its code (manifest.ts
   * included) ran. The host lists it as disabled and never loads it.
   */
  disabled?: string;
  load(): Promise<PluginDefinition>;
}

export interface DiscoverOptions {
  home: string;
  /** Override the built-in folder (tests). Defaults to this installation's plugins. */
  builtinDir?: string;
  /** Skip user plugins. */
  builtinOnly?: boolean;
  /** pluginAllowList / pluginDenyList, applied to user plugin folder names before any of their code runs. */
  lists?: PluginLists;
}

function listDirs(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((d) => !d.startsWith('.') && statSync(join(dir, d)).isDirectory())
    .sort();
}

function firstExisting(dir: string, names: string[]): string | undefined {
  return names.map((n) => join(dir, n)).find((p) => existsSync(p));
}

async function importDefault(url: string): Promise<unknown> {
  const mod = (await import(url)) as { default?: unknown; manifest?: unknown };
  return mod.default ?? mod.manifest ?? mod;
}

function asDefinition(value: unknown, where: string): PluginDefinition {
  const def = value as PluginDefinition;
  if (!def || typeof def !== 'object' || typeof def.setup !== 'function') {
    throw new KeelError(ErrorCodes.PLUGIN_LOAD_FAILED, `${where} must export default definePlugin({ manifest, setup }).`);
  }
  return def;
}

/** Built-in plugins. From dist, manifests come from one JSON file written at build time, so listing costs one read. */
export async function discoverBuiltins(builtinDir?: string): Promise<PluginCandidate[]> {
  const root = installRoot();
  const distIndex = join(root, 'dist', 'plugins', 'manifests.json');
  if (!builtinDir && runningFromDist() && existsSync(distIndex)) {
    const entries = JSON.parse(readFileSync(distIndex, 'utf8')) as Array<{ dir: string; manifest: PluginManifest }>;
    return entries.map(({ dir, manifest }) => {
      const abs = join(root, 'dist', 'plugins', dir);
      return {
        id: manifest.id,
        origin: 'builtin' as const,
        dir: abs,
        manifest,
        load: async () => asDefinition(await importDefault(pathToFileURL(join(abs, 'index.js')).href), `Built-in plugin ${dir}`),
      };
    });
  }
  const base = builtinDir ?? join(root, 'plugins');
  const out: PluginCandidate[] = [];
  for (const d of listDirs(base)) {
    const dir = join(base, d);
    const manifestFile = firstExisting(dir, ['manifest.ts', 'manifest.js', 'manifest.json']);
    const entry = firstExisting(dir, ['index.ts', 'index.js', 'index.mjs']);
    if (!manifestFile || !entry) continue;
    let manifest: unknown;
    let error: string | undefined;
    try {
      manifest = manifestFile.endsWith('.json')
        ? JSON.parse(readFileSync(manifestFile, 'utf8'))
        : await importDefault(pathToFileURL(manifestFile).href);
    } catch (e) {
      error = `cannot read ${manifestFile}: ${errorMessage(e)}`;
    }
    out.push({
      id: (manifest as PluginManifest | undefined)?.id ?? d,
      origin: 'builtin',
      dir,
      manifest,
      ...(error ? { error } : {}),
      load: async () => asDefinition(await importDefault(pathToFileURL(entry).href), `Built-in plugin ${d}`),
    });
  }
  return out;
}

/**
 * User plugins under $KEEL_HOME/plugins. TypeScript is compiled with esbuild into $KEEL_HOME/.cache. A folder whose
 * name the allow/deny lists refuse is listed as disabled without compiling or importing anything in it: a manifest
 * module is code, and code of a plugin the operator excluded never runs.
 */
export async function discoverUserPlugins(home: string, lists: PluginLists = {}): Promise<PluginCandidate[]> {
  const base = join(home, 'plugins');
  const cache = join(home, '.cache', 'plugins');
  const out: PluginCandidate[] = [];
  for (const d of listDirs(base)) {
    const dir = join(base, d);
    const gate = permittedByLists(d, lists.allow, lists.deny);
    if (!gate.ok) {
      const disabled = `folder ${d}: ${gate.reason}; none of its code was run`;
      out.push({
        id: d,
        origin: 'user',
        dir,
        disabled,
        load: () => Promise.reject(new KeelError(ErrorCodes.PLUGIN_LOAD_FAILED, disabled)),
      });
      continue;
    }
    const manifestFile = firstExisting(dir, ['manifest.json', 'manifest.ts', 'manifest.js', 'manifest.mjs']);
    const entry = firstExisting(dir, ['index.ts', 'index.js', 'index.mjs']);
    if (!manifestFile || !entry) {
      out.push({
        id: d,
        origin: 'user',
        dir,
        error: `plugin folder ${dir} needs a manifest (manifest.json, .ts or .js) and an entry (index.ts or index.js)`,
        load: () => Promise.reject(new Error('no entry')),
      });
      continue;
    }
    let manifest: unknown;
    let error: string | undefined;
    try {
      if (manifestFile.endsWith('.json')) manifest = JSON.parse(readFileSync(manifestFile, 'utf8'));
      else manifest = await importDefault((await compiled(manifestFile, join(cache, d))).url);
    } catch (e) {
      error = `cannot read ${manifestFile}: ${errorMessage(e)}`;
    }
    out.push({
      id: (manifest as PluginManifest | undefined)?.id ?? d,
      origin: 'user',
      dir,
      manifest,
      ...(error ? { error } : {}),
      load: async () => asDefinition(await importDefault((await compiled(entry, join(cache, d))).url), `User plugin ${dir}`),
    });
  }
  await sweepPluginCache(cache, new Set(listDirs(base)));
  return out;
}

/** Compiles a user plugin's module and drops its older compiled versions (one per edit otherwise, for good). */
async function compiled(source: string, cacheDir: string) {
  const m = await compileModule(source, cacheDir);
  await pruneCompiled(m.file);
  return m;
}

/** Removes the compiled copies of plugin folders that are gone from $KEEL_HOME/plugins. */
async function sweepPluginCache(cache: string, folders: Set<string>): Promise<void> {
  for (const d of listDirs(cache)) if (!folders.has(d)) await rm(join(cache, d), { recursive: true, force: true }).catch(() => undefined);
}

export async function discoverAll(opts: DiscoverOptions): Promise<PluginCandidate[]> {
  const builtins = await discoverBuiltins(opts.builtinDir);
  if (opts.builtinOnly) return builtins;
  return [...builtins, ...(await discoverUserPlugins(opts.home, opts.lists))];
}
