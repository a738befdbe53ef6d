/**
 * The first thing every `keel` process runs, before any other module is evaluated (main.ts imports it first and
 * nothing else statically):
 *
 * 1. **SIGUSR1 never opens an inspector.** Node starts its inspector (unauthenticated, on 127.0.0.1:9229) when the
 *    process gets SIGUSR1; whoever can send it (any process of the same user, `process._debugProcess`) could then
 *    read Keel's keys and run code outside every Keel check. A listener of our own replaces that behaviour.
 * 2. **The right Node.** Keel needs `node:sqlite` and APIs of Node 24 (the `node` devDependency pins it). Started
 *    by an older Node (a global install, a service unit naming /usr/bin/node), the CLI runs itself again on the
 *    pinned Node when the package has it, and otherwise refuses in one line naming the Node it needs. Silently
 *    running without email, knowledge or timelines is what it must not do.
 */
import { spawn } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';

/** The oldest Node that Keel runs on (package.json `engines` says the same). */
export const MIN_NODE_MAJOR = 24;

process.on('SIGUSR1', () => {
  process.stderr.write('keel: SIGUSR1 ignored (Keel never opens an inspector on a signal).\n');
});

/** Whether `version` (`process.versions.node`) is new enough. */
export function nodeIsSupported(version: string): boolean {
  const major = Number(version.split('.')[0]);
  return Number.isInteger(major) && major >= MIN_NODE_MAJOR;
}

/** The pinned Node of the package the CLI script belongs to (`node_modules/node/bin/node` above it), if any. */
export function pinnedNode(script: string | undefined): string | undefined {
  if (!script) return undefined;
  let dir: string;
  try {
    dir = dirname(realpathSync(script));
  } catch {
    return undefined;
  }
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, 'node_modules', 'node', 'bin', 'node');
    if (existsSync(candidate)) return candidate;
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return undefined;
}

/** The one line said when no suitable Node can be found. */
export function wrongNodeMessage(version: string): string {
  return (
    `keel: Keel needs Node ${MIN_NODE_MAJOR} or newer, and this is Node ${version} (it lacks node:sqlite, which email, knowledge and timelines need). ` +
    'Run it as `npx keel ...` (or `npm start`) in the Keel folder, which uses the Node it pins, or install Node 24 LTS.'
  );
}

if (!nodeIsSupported(process.versions.node)) {
  const pinned = process.env.KEEL_NODE_REEXEC ? undefined : pinnedNode(process.argv[1]);
  if (!pinned) {
    process.stderr.write(`${wrongNodeMessage(process.versions.node)}\n`);
    process.exit(1);
  }
  // Node before 22.15 has no process.execve: run a child with the same stdio, pass signals on, exit as it does.
  const child = spawn(pinned, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: 'inherit',
    env: { ...process.env, KEEL_NODE_REEXEC: '1' },
  });
  for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(s, () => child.kill(s));
  const code = await new Promise<number>((resolve) => {
    child.on('error', (e) => {
      process.stderr.write(`keel: could not start the pinned Node ${pinned}: ${e.message}\n${wrongNodeMessage(process.versions.node)}\n`);
      resolve(1);
    });
    child.on('exit', (c, sig) => resolve(c ?? 128 + (sig ? (constants.signals[sig] ?? 0) : 0)));
  });
  process.exit(code);
}
