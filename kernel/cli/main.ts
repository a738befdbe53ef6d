/**
 * `keel` entry point. The common `keel push "<task>" [-p N] [--json]` and `keel --help` are handled here without
 * loading commander (about 20 ms of the cold start); everything else goes to the full command tree.
 */
// First: ignore SIGUSR1 (no inspector on a signal) and make sure this is a Node that Keel runs on (node-guard.ts).
// Nothing else is imported statically: the bundle would evaluate it before the guard.
import './node-guard.js';

// node:sqlite (the knowledge store) is stable in use but still flagged experimental in Node 24; its one-line
// warning on every start would read like a fault to users, so that warning alone is dropped.
const emitWarning = process.emitWarning.bind(process);
process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
  const text = typeof warning === 'string' ? warning : warning.message;
  if (/SQLite is an experimental feature|process\.execve is an experimental feature/.test(text)) return;
  (emitWarning as (...a: unknown[]) => void)(warning, ...rest);
}) as typeof process.emitWarning;

export interface FastPush {
  task: string;
  priority: string;
  json: boolean;
}

/** The arguments after `push`, or undefined when they need the full parser (help, unknown options, none). */
export function parseFastPush(args: string[]): FastPush | undefined {
  const words: string[] = [];
  let priority = '5';
  let json = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      words.push(...args.slice(i + 1));
      break;
    }
    if (a === '-p' || a === '--priority') {
      const v = args[++i];
      if (v === undefined) return undefined;
      priority = v;
    } else if (a.startsWith('--priority=')) priority = a.slice('--priority='.length);
    else if (a === '--json') json = true;
    else if (a.startsWith('-') && a.length > 1 && !/^-\d/.test(a)) return undefined;
    else words.push(a);
  }
  return words.length ? { task: words.join(' '), priority, json } : undefined;
}

const argv = process.argv;
const rest = argv.slice(2);
const fast = rest[0] === 'push' ? parseFastPush(rest.slice(1)) : undefined;
if (rest.length === 0 || (rest.length === 1 && ['--help', '-h', 'help'].includes(rest[0]!))) {
  process.stdout.write((await import('./root-help.js')).rootHelp());
} else if (fast) {
  try {
    process.exitCode = await (await import('./cmd-push.js')).push(fast.task, fast);
  } catch (e) {
    process.exitCode = (await import('./exit.js')).reportError(e);
  }
} else {
  if (rest[0] === 'run' || rest[0] === 'gateway') (await import('./tune.js')).tuneLongRunning();
  // After the re-exec above, before the command tree and the kernel load: their bytecode comes from the cache.
  (await import('./compile-cache.js')).startCompileCache();
  await (await import('./program.js')).main(argv);
}
