/**
 * Where things are: the data directory and the installation's own files (source tree or dist/).
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** `KEEL_HOME`, else `~/.keel`. */
export function keelHome(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.KEEL_HOME || join(homedir(), '.keel'));
}

let cachedRoot: string | undefined;

/** The installation root: the nearest folder above this module holding package.json. */
export function installRoot(): string {
  if (cachedRoot) return cachedRoot;
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('Keel installation root not found (no package.json above the kernel).');
    dir = up;
  }
  cachedRoot = dir;
  return dir;
}

/** True when this code runs from the compiled dist/ bundle. */
export function runningFromDist(): boolean {
  return fileURLToPath(import.meta.url).includes(`${join(installRoot(), 'dist')}`);
}

/** The SDK module user code imports as `keel/sdk`. */
export function sdkEntry(): string {
  const root = installRoot();
  const dist = join(root, 'dist', 'sdk.js');
  if (runningFromDist() && existsSync(dist)) return dist;
  return join(root, 'sdk', 'index.ts');
}

/**
 * The file behind an SDK subpath user code may import: `vendors/<name>` (`keel/sdk/vendors/common`), `channel-kit`
 * (`keel/sdk/channel-kit`: defineChannel and the kit's parts) or `testing` (`keel/sdk/testing`), the same modules
 * built-in plugins use. Undefined for anything else, so user code cannot
 * reach into other SDK files (or, through `..`, the kernel).
 */
export function sdkSubpathEntry(subpath: string): string | undefined {
  const root = installRoot();
  const fromDist = runningFromDist();
  let rel: string;
  if (subpath === 'testing') rel = join('testing', 'index');
  else if (subpath === 'channel-kit') rel = join('channel-kit', 'index');
  else if (/^vendors\/[a-z][a-z0-9-]*$/.test(subpath)) rel = subpath;
  else return undefined;
  const dist = join(root, 'dist', 'sdk', `${rel}.js`);
  if (fromDist && existsSync(dist)) return dist;
  // The testing entry sits above the contract, in testing/ (it boots a kernel); the vendor adapters are in sdk/.
  const src = subpath === 'testing' ? join(root, 'testing', 'index.ts') : join(root, 'sdk', `${rel}.ts`);
  return existsSync(src) ? src : undefined;
}
