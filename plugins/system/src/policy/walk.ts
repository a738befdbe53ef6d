/**
 * What every per-program rule of the command policy shares: the walk (programs found so far), the way back into
 * the walker (for programs and shell code a rule finds inside its arguments), and the option-skipping helpers.
 */
import { Refusal, type Word } from '../tokenize.js';

export interface Walk {
  programs: Set<string>;
  /** Programs that are shell builtins or names found inside code (deny list only). */
  builtins: Set<string>;
}

/** How a rule hands what it found back to the walker. */
export interface Visitor {
  walk: Walk;
  depth: number;
  /** Check an argv a rule found (a wrapped command, `find -exec ...`). */
  argv(words: Word[], depth?: number): void;
  /** Check shell code a rule found (`bash -c`, `su -c`, `git rebase --exec`). */
  script(code: string, depth?: number): void;
}

/**
 * A rule for one program: what else it would start, given its arguments. It adds names to `v.walk`, calls back
 * into the walker, or throws Refusal when that cannot be known.
 */
export type ProgramRule = (name: string, rest: Word[], v: Visitor) => void;

export function plain(words: Word[]): string[] {
  return words.map((w) => w.value);
}

/** `/usr/bin/RM.exe` -> `rm`. */
export function programName(p: string): string {
  const base = p.split(/[\\/]/).pop() ?? p;
  return base.toLowerCase().replace(/\.(exe|com|cmd|bat|ps1)$/, '');
}

/** Index of the first argument after the options (options in `withValue` take the next argument). */
export function skipOptions(args: string[], withValue: string[], alsoFlag?: RegExp): number {
  let i = 0;
  while (i < args.length) {
    const a = args[i] as string;
    if (a === '--') return i + 1;
    if (!a.startsWith('-') || a === '-') return i;
    if (alsoFlag?.test(a)) {
      i++;
      continue;
    }
    if (withValue.includes(a)) {
      i += 2;
      continue;
    }
    i++;
  }
  return i;
}

export function optionValue(args: string[], names: string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (names.includes(a)) return args[i + 1] ?? '';
    for (const n of names) if (n.startsWith('--') && a.startsWith(`${n}=`)) return a.slice(n.length + 1);
  }
  return undefined;
}

/** Environment variables that make an allowed program run another one (or load code). */
const DANGEROUS_ENV =
  /^(LD_PRELOAD|LD_LIBRARY_PATH|LD_AUDIT|DYLD_[A-Z_]+|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|GIT_[A-Z_]*(SSH|EDITOR|PAGER|ASKPASS|EXTERNAL_DIFF|EXEC_PATH|PROXY|CONFIG|TEMPLATE_DIR|DIR)[A-Z_]*|SSH_ASKPASS|EDITOR|VISUAL|PAGER|MANPAGER|NODE_OPTIONS|NODE_PATH|PYTHONSTARTUP|PYTHONPATH|PYTHONHOME|PERL5OPT|PERL5LIB|PERLLIB|RUBYOPT|RUBYLIB|NPM_CONFIG_[A-Z_]*|npm_config_[a-z_]*|PATH|IFS|CDPATH)$/;

export function checkEnvName(name: string): void {
  if (DANGEROUS_ENV.test(name)) {
    throw new Refusal(`setting ${name} can make a program load or run other code, so the command cannot be proven safe`);
  }
}

/** Refuses when a program that runs its arguments gets arguments only a shell would know. */
export function staticArgs(name: string, rest: Word[]): void {
  if (rest.some((w) => w.dynamic)) {
    throw new Refusal(
      `the arguments of "${name}" are only known when a shell expands them, and ${name} runs its arguments, so the command cannot be proven safe`,
    );
  }
}

/** Continue the walk with the arguments from `from` on, as a command of their own. */
export function runsFrom(rest: Word[], from: number, v: Visitor): void {
  const sub = rest.slice(from);
  if (sub.length > 0) v.argv(sub, v.depth + 1);
}
