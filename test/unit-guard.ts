/**
 * Set-up file of the unit tier (test/tiers.ts): a unit test that starts a child process or listens on a socket
 * fails with a message that names the tier to move it to (esbuild's compiler service excepted, below). Spawning goes through `child_process`; listening
 * through `net.Server.prototype.listen` (http, https and ws servers included).
 */
import { createRequire, syncBuiltinESMExports } from 'node:module';

const require = createRequire(import.meta.url);
const cp = require('node:child_process') as Record<string, unknown>;
const net = require('node:net') as typeof import('node:net');

function refuse(what: string): never {
  // Code under test may swallow the error (a skill that reports it, a retry loop): say it where it is seen too.
  process.stderr.write(`unit-guard: ${what} refused\n${new Error().stack?.split('\n').slice(2, 8).join('\n')}\n`);
  throw new Error(
    `${what} in a unit test: unit tests start no child process and no server (test/tiers.ts). ` +
      'Rename the file to *.int.test.ts (loopback servers) or *.e2e.test.ts (child processes).',
  );
}

/**
 * The one child process a unit test may have: esbuild's compiler service, which the kernel starts (once per
 * process) to compile plugins as it loads them. It is the loader, not a part under test.
 */
function isEsbuildService(cmd: unknown): boolean {
  return typeof cmd === 'string' && /[\\/]esbuild(\.exe)?$/.test(cmd);
}

// The unit tier reuses its workers across files (isolate: false): wrap once per worker.
const GUARDED = Symbol.for('keel.unitGuard');
const g = globalThis as { [GUARDED]?: true };
if (!g[GUARDED]) {
  g[GUARDED] = true;
  guard();
}

function guard(): void {
  for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork']) {
    const real = cp[name] as (...args: unknown[]) => unknown;
    cp[name] = (...args: unknown[]) => (isEsbuildService(args[0]) ? real(...args) : refuse(`child_process.${name}`));
  }
  net.Server.prototype.listen = function listen(): never {
    refuse('A server listening');
  } as unknown as typeof net.Server.prototype.listen;
  syncBuiltinESMExports();
}
