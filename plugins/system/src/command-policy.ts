/**
 * THE command policy (SPEC "Modes", "Security keys"): a pure function over an argv.
 *
 * - The deny list beats the allow list, also in sudo mode.
 * - An empty allow list blocks every command unless sudo mode is on; sudo mode bypasses only the allow list.
 * - Both lists apply to EVERY program the argv would start, not just the first word: paths and `.exe` names,
 *   wrappers that run their arguments (`env`, `nice`, `timeout`, `xargs`, `sudo`, ...), `find -exec` and
 *   `find -delete`, shell code (`bash -c`, parsed recursively), inline interpreter code (`node -e`, `python -c`,
 *   `perl -e`, `ruby -e`, `pwsh -c`), `npx <pkg>`, and git options that name a program. How each program is read
 *   is a row of the table in policy/rules.ts.
 * - What cannot be proven safe is refused with the reason.
 * docs/security.md lists every rule and its limits.
 */
import { errorMessage } from '../../../sdk/errors.js';
import { parseShellScript, Refusal, type Word } from './tokenize.js';
import { ruleFor } from './policy/rules.js';
import { checkEnvName, programName, type Visitor, type Walk } from './policy/walk.js';

export { programName } from './policy/walk.js';

export interface PolicyLists {
  allow: readonly string[];
  deny: readonly string[];
  sudo: boolean;
}

export interface PolicyDecision {
  allowed: boolean;
  /** Every program the argv would start, as normalised names (for `find -delete`: `rm`). */
  programs: string[];
  reason: string;
}

/** Builtins of a shell that start no program: checked against the deny list only. */
const SHELL_BUILTINS = new Set([
  'cd',
  'export',
  'true',
  'false',
  ':',
  'test',
  '[',
  'pwd',
  'set',
  'unset',
  'shift',
  'exit',
  'return',
  'local',
  'declare',
  'typeset',
  'readonly',
  'read',
  'printf',
  'echo',
  'wait',
  'umask',
  'break',
  'continue',
  'alias',
  'shopt',
  'pushd',
  'popd',
  'dirs',
  'let',
  'type',
  'ulimit',
  'getopts',
  'exec',
  'command',
  'builtin',
]);

/** Builtins that run code we cannot see. */
const UNPROVABLE_BUILTINS = new Set([
  'eval',
  'source',
  '.',
  'trap',
  'alias',
  'enable',
  'bind',
  'fc',
  'mapfile',
  'readarray',
  'hash',
  'complete',
  'compgen',
]);

const MAX_DEPTH = 8;

/** Whether `program` (a normalised name) is on the deny list: the name itself, or a variant like `mkfs.ext4`. */
export function deniedBy(program: string, deny: ReadonlySet<string>): string | undefined {
  if (deny.has(program)) return program;
  return [...deny].find((d) => program.startsWith(`${d}.`));
}

export function analyze(argv: readonly string[], lists: PolicyLists): PolicyDecision {
  const walk: Walk = { programs: new Set(), builtins: new Set() };
  try {
    if (!Array.isArray(argv) || argv.length === 0 || typeof argv[0] !== 'string' || argv[0].trim() === '') {
      throw new Refusal('the command is empty');
    }
    if (argv.some((a) => typeof a !== 'string' || a.includes('\0'))) throw new Refusal('an argument is not a plain string');
    visitArgv(
      argv.map((value) => ({ value, dynamic: false })),
      walk,
      0,
      true,
    );
  } catch (e) {
    if (e instanceof Refusal) return { allowed: false, programs: [...walk.programs], reason: e.message };
    return {
      allowed: false,
      programs: [...walk.programs],
      reason: `the command could not be checked (${errorMessage(e)}), so it cannot be proven safe`,
    };
  }
  const programs = [...walk.programs, ...[...walk.builtins].filter((b) => !walk.programs.has(b))];
  const deny = new Set(lists.deny.map(programName).filter(Boolean));
  for (const p of programs) {
    const hit = deniedBy(p, deny);
    if (hit !== undefined) {
      const tail = lists.sudo ? ' (the deny list applies in sudo mode too)' : '';
      const via = p === argv.map(programName)[0] ? '' : ' (started by the command, not only its first word)';
      return { allowed: false, programs, reason: `"${p}" is on commandDenyList${via}${tail}` };
    }
  }
  if (!lists.sudo) {
    const allow = new Set(lists.allow.map(programName).filter(Boolean));
    if (allow.size === 0) {
      return { allowed: false, programs, reason: 'commandAllowList is empty, which blocks every command unless sudoMode is on' };
    }
    for (const p of walk.programs) {
      if (!allow.has(p)) return { allowed: false, programs, reason: `"${p}" is not on commandAllowList` };
    }
  }
  return { allowed: true, programs, reason: lists.sudo ? 'allowed (sudo mode: allow list bypassed, deny list checked)' : 'allowed' };
}

function addProgram(word: Word, walk: Walk, builtinOk: boolean): string {
  if (word.dynamic || /[$`*?[\]{}~]/.test(word.value)) {
    throw new Refusal(`the program name "${word.value}" is only known when a shell expands it, so the command cannot be proven safe`);
  }
  const name = programName(word.value);
  if (name === '') throw new Refusal('a program name is empty');
  if (builtinOk && UNPROVABLE_BUILTINS.has(name)) {
    throw new Refusal(`the shell builtin "${name}" runs code that is not visible in the command, so it cannot be proven safe`);
  }
  if (builtinOk && SHELL_BUILTINS.has(name)) walk.builtins.add(name);
  else walk.programs.add(name);
  return name;
}

function visitor(walk: Walk, depth: number): Visitor {
  return {
    walk,
    depth,
    argv: (words, d = depth + 1) => visitArgv(words, walk, d),
    script: (code, d = depth + 1) => visitScript(code, walk, d),
  };
}

/** Check one argv: its program, then whatever that program would start (its row in the rule table). */
function visitArgv(words: Word[], walk: Walk, depth: number, topLevel = false): void {
  if (depth > MAX_DEPTH) throw new Refusal('the command nests programs too deeply to be checked, so it cannot be proven safe');
  if (words.length === 0) return;
  const name = addProgram(words[0] as Word, walk, !topLevel);
  ruleFor(name)?.(name, words.slice(1), visitor(walk, depth));
}

function visitScript(code: string, walk: Walk, depth: number): void {
  if (depth > MAX_DEPTH) throw new Refusal('the command nests shells too deeply to be checked, so it cannot be proven safe');
  const script = parseShellScript(code, depth);
  for (const a of script.assignments) checkEnvName(a);
  for (const cmd of script.commands) visitArgv(cmd, walk, depth + 1);
  for (const s of script.substitutions) visitScript(s, walk, depth + 1);
}
