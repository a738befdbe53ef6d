/**
 * Long-running commands (`keel run`, `keel gateway`) replace their own process image once, early, with a smaller
 * V8 young generation: `--max-semi-space-size` cannot be changed once the heap exists, and the default (16 MB
 * semi-spaces, grown during plugin loading and never given back) costs about 20 MB of idle RSS. Measured on the
 * gateway: idle RSS 129 -> 107 MB, requests/s unchanged or better (`npm run bench`, docs/performance.md).
 *
 * `KEEL_SEMI_SPACE_MB` sets the size (default 2; `0` keeps Node's default). Skipped when the flag is already given
 * (on the command line or in NODE_OPTIONS), where process.execve does not exist (Windows, Node < 22.15), and for
 * `--help`. The pid stays the same, so pid files, signals and a parent's `child.pid` are unaffected.
 */
const LONG_RUNNING = new Set(['run', 'gateway']);
export const DEFAULT_SEMI_SPACE_MB = 2;

export function tunedArgs(argv: readonly string[], execArgv: readonly string[], env: NodeJS.ProcessEnv): string[] | undefined {
  const cmd = argv[2];
  if (!cmd || !LONG_RUNNING.has(cmd)) return undefined;
  if (argv.includes('--help')) return undefined;
  const raw = env.KEEL_SEMI_SPACE_MB?.trim();
  const mb = raw === undefined || raw === '' ? DEFAULT_SEMI_SPACE_MB : Number(raw);
  if (!Number.isInteger(mb) || mb <= 0 || mb > 256) return undefined;
  const has = (s: string | undefined) => Boolean(s && /--max-semi-space-size\b/.test(s));
  if (execArgv.some((a) => has(a)) || has(env.NODE_OPTIONS)) return undefined;
  return [`--max-semi-space-size=${mb}`, ...execArgv, ...argv.slice(1)];
}

export function tuneLongRunning(): void {
  const execve = (process as { execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never }).execve;
  if (typeof execve !== 'function') return;
  const args = tunedArgs(process.argv, process.execArgv, process.env);
  if (!args) return;
  try {
    execve.call(process, process.execPath, [process.execPath, ...args], process.env);
  } catch {
    // execve refused (a worker thread, a sandbox): run on with Node's defaults.
  }
}
