/**
 * `keel` entry point. The common `keel push "<task>" [-p N] [--json]` is parsed here by hand and never loads
 * commander (about 15 ms of the cold start); anything else, including `--help`, goes to the full command tree.
 */
import { reportError } from './exit.js';

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
const fast = argv[2] === 'push' ? parseFastPush(argv.slice(3)) : undefined;
if (fast) {
  try {
    process.exitCode = await (await import('./cmd-push.js')).push(fast.task, fast);
  } catch (e) {
    process.exitCode = reportError(e);
  }
} else {
  await (await import('./program.js')).main(argv);
}
