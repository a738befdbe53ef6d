/**
 * V8's compile cache for Keel's modules: where it goes (the user's cache folder, never a shared temporary one), how
 * it is turned off, and that the real CLI fills it on a first run and reads it on the next.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { compileCacheDir } from '../../kernel/cli/compile-cache.js';
import { KEEL_CLI, rm, tmp } from '../helpers.js';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach(rm));

function run(env: Record<string, string>, args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) =>
    execFile(process.execPath, [KEEL_CLI, ...args], { env: { ...process.env, ...env }, timeout: 30_000 }, (err, _out, stderr) =>
      resolve({ code: err ? 1 : 0, stderr }),
    ),
  );
}

/** Every cache file under `dir` (Node keeps them in one sub-folder per Node version and V8 flags). */
const files = (dir: string) =>
  existsSync(dir) ? readdirSync(dir, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()) : [];

describe('compile cache', () => {
  it("goes to the user's cache folder, KEEL_COMPILE_CACHE moves it, 0 (or NODE_DISABLE_COMPILE_CACHE) turns it off", () => {
    expect(compileCacheDir({}, () => '/home/ana')).toBe('/home/ana/.cache/keel/compile-cache');
    expect(compileCacheDir({ XDG_CACHE_HOME: '/var/cache/ana' }, () => '/home/ana')).toBe('/var/cache/ana/keel/compile-cache');
    expect(compileCacheDir({ KEEL_COMPILE_CACHE: '/srv/keel-cache' })).toBe('/srv/keel-cache');
    expect(compileCacheDir({ KEEL_COMPILE_CACHE: '0' })).toBeUndefined();
    expect(compileCacheDir({ NODE_DISABLE_COMPILE_CACHE: '1' })).toBeUndefined();
  });

  it('the CLI fills it on a first run and reads it back on the next; turned off, it writes nothing', async () => {
    const home = tmp('keel-cc-home-');
    const cache = tmp('keel-cc-');
    const off = tmp('keel-cc-off-');
    dirs.push(home, cache, off);
    const env = { KEEL_HOME: home, XDG_CACHE_HOME: cache };
    expect((await run(env, ['plugins', '--json'])).code).toBe(0);
    const written = files(join(cache, 'keel', 'compile-cache'));
    // The command tree, the kernel and their libraries: many modules, each its own entry.
    expect(written.length).toBeGreaterThan(20);
    const second = await run({ ...env, NODE_DEBUG_NATIVE: 'COMPILE_CACHE' }, ['plugins', '--json']);
    expect(second.code).toBe(0);
    expect(second.stderr).toMatch(/V8 code cache for \S+ \S+dist\/chunks\/\S+\.js was accepted/);
    expect((await run({ KEEL_HOME: home, XDG_CACHE_HOME: off, KEEL_COMPILE_CACHE: '0' }, ['plugins', '--json'])).code).toBe(0);
    expect(files(off)).toEqual([]);
  });
});
