/**
 * V8's compile cache for Keel's own modules (Node's `module.enableCompileCache`): the first start after an install
 * or an upgrade compiles as before and leaves the bytecode in a per-user cache folder; later starts of long-running
 * commands (`keel run`, `keel gateway`) and the full command tree read it instead of compiling again. Node checks
 * each entry against its module's source and its own version, so a changed file is compiled afresh.
 *
 * The folder is `$XDG_CACHE_HOME/keel/compile-cache` (default `~/.cache/keel/compile-cache`), the user's own,
 * never a shared temporary folder; `KEEL_COMPILE_CACHE=<dir>` moves it, `KEEL_COMPILE_CACHE=0` turns it off.
 */
import module from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Where the cache goes for this environment, or undefined when it is turned off. */
export function compileCacheDir(env: NodeJS.ProcessEnv, home: () => string = homedir): string | undefined {
  const v = env.KEEL_COMPILE_CACHE?.trim();
  if (v === '0' || env.NODE_DISABLE_COMPILE_CACHE) return undefined;
  if (v) return v;
  return join(env.XDG_CACHE_HOME || join(home(), '.cache'), 'keel', 'compile-cache');
}

type CacheApi = { enableCompileCache?: (dir?: string) => unknown; flushCompileCache?: () => void };

/**
 * Turns the cache on for the modules loaded from now on. Never throws: without it Keel only starts slower. Node
 * writes the cache at a normal exit; a long-running process that is stopped by a signal may never exit that way,
 * so what its start loaded is also written a few seconds in (`flushAfterMs`).
 */
export function startCompileCache(env: NodeJS.ProcessEnv = process.env, flushAfterMs = 3000): void {
  const api = module as CacheApi;
  if (typeof api.enableCompileCache !== 'function') return;
  try {
    const dir = compileCacheDir(env);
    if (!dir) return;
    api.enableCompileCache(dir);
    if (typeof api.flushCompileCache === 'function')
      setTimeout(() => {
        try {
          api.flushCompileCache!();
        } catch {
          // a full disk: the next start compiles again
        }
      }, flushAfterMs).unref();
  } catch {
    // an unwritable home: run on without it
  }
}
