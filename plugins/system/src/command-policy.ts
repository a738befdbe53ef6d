/**
 * THE command policy (SPEC "Modes", "Security keys"): a pure function over an argv.
 *
 * - The deny list beats the allow list, also in sudo mode.
 * - An empty allow list blocks every command unless sudo mode is on; sudo mode bypasses only the allow list.
 * - Both lists apply to EVERY program the argv would start, not just the first word: paths and `.exe` names,
 *   wrappers that run their arguments (`env`, `nice`, `timeout`, `xargs`, `sudo`, ...), `find -exec` and
 *   `find -delete`, shell code (`bash -c`, parsed recursively), inline interpreter code (`node -e`, `python -c`,
 *   `perl -e`, `ruby -e`, `pwsh -c`), `npx <pkg>`, and git options that name a program.
 * - What cannot be proven safe is refused with the reason.
 *
 * docs/security.md lists every rule and its limits.
 */
import { Refusal, parseShellScript, toArgv, type Word } from './tokenize.js';

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

/** `/usr/bin/RM.exe` -> `rm`. */
export function programName(p: string): string {
  const base = p.split(/[\\/]/).pop() ?? p;
  return base.toLowerCase().replace(/\.(exe|com|cmd|bat|ps1)$/, '');
}

/** Builtins of a shell that start no program: checked against the deny list only. */
const SHELL_BUILTINS = new Set([
  'cd', 'export', 'true', 'false', ':', 'test', '[', 'pwd', 'set', 'unset', 'shift', 'exit', 'return', 'local',
  'declare', 'typeset', 'readonly', 'read', 'printf', 'echo', 'wait', 'umask', 'break', 'continue', 'alias', 'shopt',
  'pushd', 'popd', 'dirs', 'let', 'type', 'ulimit', 'getopts', 'exec', 'command', 'builtin',
]);

/** String literals in inline code that are module names or options, not commands. */
const NOT_COMMANDS = /^(node:)?(child_process|subprocess|os|sys|shutil|fs|path|util|open3|utf-?8|ascii|latin1|inherit|pipe|ignore|shell|r|w|a|rb|wb)$/i;

/** Builtins that run code we cannot see. */
const UNPROVABLE_BUILTINS = new Set(['eval', 'source', '.', 'trap', 'alias', 'enable', 'bind', 'fc', 'mapfile', 'readarray', 'hash', 'complete', 'compgen']);

/** Environment variables that make an allowed program run another one (or load code). */
const DANGEROUS_ENV = /^(LD_PRELOAD|LD_LIBRARY_PATH|LD_AUDIT|DYLD_[A-Z_]+|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|GIT_[A-Z_]*(SSH|EDITOR|PAGER|ASKPASS|EXTERNAL_DIFF|EXEC_PATH|PROXY|CONFIG|TEMPLATE_DIR|DIR)[A-Z_]*|SSH_ASKPASS|EDITOR|VISUAL|PAGER|MANPAGER|NODE_OPTIONS|NODE_PATH|PYTHONSTARTUP|PYTHONPATH|PYTHONHOME|PERL5OPT|PERL5LIB|PERLLIB|RUBYOPT|RUBYLIB|NPM_CONFIG_[A-Z_]*|npm_config_[a-z_]*|PATH|IFS|CDPATH)$/;

/** Inline code that builds what it runs at run time: nothing about it can be proven. */
const DYNAMIC_CODE =
  /\beval\b|\bexec\s*\(\s*[^'"\s)]|new\s+Function|\bFunction\s*\(|fromCharCode|\batob\b|b64decode|base64|Buffer\.from|\bdecode\s*\(|\$\{|\bcompile\s*\(|__import__\s*\(\s*[^'"\s]|importlib|\bgetattr\s*\(|\brequire\s*\(\s*[^'"`\s]|\bimport\s*\(\s*[^'"`\s]|\\x[0-9a-fA-F]{2}|\\u[0-9a-fA-F]{4}|\\[0-7]{3}|\bchr\s*\(|\bpack\s*\(|\bsend\s*\(|\bconstantize\b|\bInvoke-Expression\b|\biex\b|\bFromBase64String\b|-EncodedCommand|\bString\.raw\b|\bReflect\b|globalThis\s*\[|process\s*\[|\bprocess\.binding\b|['"`]\s*\+\s*['"`]|\.join\s*\(|\.reverse\s*\(/i;

/** Inline code that starts programs. */
const SPAWNS =
  /child_process|\bspawn|\bexec[a-zA-Z]*\s*\(|\bfork\s*\(|\bexecFile|os\.system|os\.popen|os\.exec|os\.spawn|\bsubprocess\b|\bpopen\b|\bsystem\s*\(|\bsystem\s+['"]|\bexec\s+['"]|%x|IO\.popen|Open3|Process\.spawn|Kernel\.|\bStart-Process\b|\bpty\b|\bBun\.spawn|Deno\.(run|Command)|`|\bqx\b|\bpcntl_exec|\bshell_exec|\bpassthru\b|\bproc_open\b/;

/** Library calls that delete files, which count as running `rm` (as `find -delete` does). */
const DELETES =
  /\b(rmSync|rmdirSync|unlinkSync|rm|rmdir|unlink|rmtree|remove|removedirs|Remove-Item|ri|rd|del|erase|delete_file|FileUtils|File\.delete|Dir\.delete|unlink_all|remove_tree)\b/;

interface Walk {
  programs: Set<string>;
  /** Programs that are shell builtins (not started, deny list only). */
  builtins: Set<string>;
}

const MAX_DEPTH = 8;

export function analyze(argv: readonly string[], lists: PolicyLists): PolicyDecision {
  const walk: Walk = { programs: new Set(), builtins: new Set() };
  try {
    if (!Array.isArray(argv) || argv.length === 0 || typeof argv[0] !== 'string' || argv[0].trim() === '') {
      throw new Refusal('the command is empty');
    }
    if (argv.some((a) => typeof a !== 'string' || a.includes('\0'))) throw new Refusal('an argument is not a plain string');
    visitArgv(argv.map((value) => ({ value, dynamic: false })), walk, 0, true);
  } catch (e) {
    if (e instanceof Refusal) return { allowed: false, programs: [...walk.programs], reason: e.message };
    return { allowed: false, programs: [...walk.programs], reason: `the command could not be checked (${e instanceof Error ? e.message : String(e)}), so it cannot be proven safe` };
  }
  const programs = [...walk.programs, ...[...walk.builtins].filter((b) => !walk.programs.has(b))];
  const deny = new Set(lists.deny.map(programName).filter(Boolean));
  for (const p of programs) {
    const hit = deny.has(p) ? p : [...deny].find((d) => p.startsWith(`${d}.`));
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

// ------------------------------------------------------------------ walking

function plain(words: Word[]): string[] {
  return words.map((w) => w.value);
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

/** Check one argv: its program, then whatever that program would start. */
function visitArgv(words: Word[], walk: Walk, depth: number, topLevel = false): void {
  if (depth > MAX_DEPTH) throw new Refusal('the command nests programs too deeply to be checked, so it cannot be proven safe');
  if (words.length === 0) return;
  const first = words[0] as Word;
  const name = addProgram(first, walk, !topLevel);
  const rest = words.slice(1);
  const args = plain(rest);
  const next = (from: number) => {
    const sub = rest.slice(from);
    if (sub.length > 0) visitArgv(sub, walk, depth + 1);
  };
  const dynamicArgs = () => {
    if (rest.some((w) => w.dynamic)) {
      throw new Refusal(`the arguments of "${name}" are only known when a shell expands them, and ${name} runs its arguments, so the command cannot be proven safe`);
    }
  };

  if (isShell(name)) return visitShell(name, rest, walk, depth);
  if (isInterpreter(name)) return visitInterpreter(name, rest, walk, depth);

  switch (name) {
    case 'env':
      dynamicArgs();
      return next(skipEnv(args, walk, depth));
    case 'nice':
      dynamicArgs();
      return next(skipOptions(args, ['-n', '--adjustment'], /^-\d+$/));
    case 'nohup':
    case 'setsid':
    case 'command':
    case 'exec':
    case 'builtin':
    case 'unbuffer':
    case 'caffeinate':
    case 'catchsegv':
      dynamicArgs();
      return next(skipOptions(args, ['-a']));
    case 'time':
      dynamicArgs();
      return next(skipOptions(args, ['-f', '--format', '-o', '--output']));
    case 'timeout': {
      dynamicArgs();
      const at = skipOptions(args, ['-s', '--signal', '-k', '--kill-after']);
      return next(at + 1); // the duration
    }
    case 'stdbuf':
      dynamicArgs();
      return next(skipOptions(args, ['-i', '-o', '-e', '--input', '--output', '--error']));
    case 'ionice':
      dynamicArgs();
      return next(skipOptions(args, ['-c', '--class', '-n', '--classdata', '-p', '--pid', '-P', '--pgid', '-u', '--uid']));
    case 'taskset': {
      dynamicArgs();
      const at = skipOptions(args, []);
      if (args.slice(0, at).some((a) => a === '-p' || a === '--pid' || /^-[a-z]*p/.test(a))) return;
      return next(at + 1); // the cpu mask
    }
    case 'chrt': {
      dynamicArgs();
      const at = skipOptions(args, ['-T', '-P', '-D']);
      return next(at + 1); // the priority
    }
    case 'nsenter':
    case 'unshare':
    case 'numactl':
    case 'prlimit':
    case 'cgexec':
      dynamicArgs();
      return next(skipOptions(args, ['-t', '--target', '-g', '-m', '-p', '-N', '-C', '-S', '-G']));
    case 'sudo':
    case 'doas':
    case 'pkexec':
    case 'runas': {
      dynamicArgs();
      if (args.some((a) => /^-[a-zA-Z]*[si]$/.test(a) || a === '--shell' || a === '--login')) {
        if (!hasCommandAfterOptions(args)) throw new Refusal(`"${name} -s/-i" opens a shell, which cannot be proven safe`);
      }
      if (args.includes('-e') || args.includes('--edit')) return;
      return next(skipOptions(args, ['-u', '--user', '-g', '--group', '-C', '--close-from', '-D', '--chdir', '-p', '--prompt', '-r', '--role', '-t', '--type', '-U', '--other-user', '-T', '--command-timeout', '-h', '--host']));
    }
    case 'su':
    case 'runuser': {
      dynamicArgs();
      const c = optionValue(args, ['-c', '--command', '--session-command']);
      if (c === undefined) throw new Refusal(`"${name}" opens a shell as another user, which cannot be proven safe`);
      return visitScript(c, walk, depth + 1);
    }
    case 'chroot': {
      dynamicArgs();
      const at = skipOptions(args, ['--userspec', '--groups']);
      if (at + 1 >= args.length) throw new Refusal('"chroot" without a command opens a shell, which cannot be proven safe');
      return next(at + 1);
    }
    case 'xargs':
      dynamicArgs();
      return next(skipOptions(args, ['-a', '--arg-file', '-d', '--delimiter', '-E', '-e', '--eof', '-I', '-i', '--replace', '-L', '-l', '--max-lines', '-n', '--max-args', '-P', '--max-procs', '-s', '--max-chars', '--process-slot-var']));
    case 'parallel':
      throw new Refusal('"parallel" builds its commands from its input, so the command cannot be proven safe');
    case 'watch': {
      dynamicArgs();
      const at = skipOptions(args, ['-n', '--interval', '-d', '--differences', '-q', '--equexit', '--chgexit']);
      const sub = args.slice(at);
      if (args.slice(0, at).some((a) => a === '-x' || a === '--exec' || /^-[a-z]*x/.test(a))) return next(at);
      if (sub.length) return visitScript(sub.join(' '), walk, depth + 1);
      return;
    }
    case 'strace':
    case 'ltrace':
    case 'valgrind':
    case 'gdb':
    case 'perf':
      dynamicArgs();
      return next(skipOptions(args, ['-o', '-e', '-p', '-s', '-u', '-E', '-a', '-b', '-I', '-P', '-X', '--output', '--args']));
    case 'flock': {
      dynamicArgs();
      const c = optionValue(args, ['-c', '--command']);
      if (c !== undefined) return visitScript(c, walk, depth + 1);
      const at = skipOptions(args, ['-w', '--timeout', '-E', '--conflict-exit-code']);
      return next(at + 1); // the lock file
    }
    case 'script': {
      dynamicArgs();
      const c = optionValue(args, ['-c', '--command']);
      if (c === undefined) throw new Refusal('"script" without -c opens a shell, which cannot be proven safe');
      return visitScript(c, walk, depth + 1);
    }
    case 'busybox':
    case 'toybox':
      dynamicArgs();
      return next(0);
    case 'find':
      return visitFind(rest, walk, depth);
    case 'git':
      return visitGit(rest, walk, depth);
    case 'npx':
    case 'bunx':
    case 'pnpx':
      return visitNpx(name, rest, walk, depth);
    case 'npm':
    case 'pnpm':
    case 'yarn':
      return visitNpm(name, rest, walk, depth);
    case 'cmd': {
      const at = args.findIndex((a) => /^\/[ck]$/i.test(a));
      if (at >= 0) return visitScript(args.slice(at + 1).join(' '), walk, depth + 1);
      return;
    }
    case 'ssh':
      // Runs on another machine: only the local program is checked (documented).
      return;
    default:
      return;
  }
}

function isShell(name: string): boolean {
  return /^(bash|sh|zsh|dash|ksh|mksh|ash|yash|fish|tcsh|csh|rbash|posh)$/.test(name);
}

function isInterpreter(name: string): boolean {
  return /^(python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|perl[0-9.]*|ruby[0-9.]*|php[0-9.]*|lua[0-9.]*|pwsh|powershell|osascript|tclsh|wish|Rscript|awk|gawk|mawk|nawk)$/i.test(name);
}

/** Index of the first argument after the options (options in `withValue` take the next argument). */
function skipOptions(args: string[], withValue: string[], alsoFlag?: RegExp): number {
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

function hasCommandAfterOptions(args: string[]): boolean {
  return skipOptions(args, ['-u', '-g', '-C', '-D', '-p', '-r', '-t', '-U', '-T', '-h']) < args.length;
}

function optionValue(args: string[], names: string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (names.includes(a)) return args[i + 1] ?? '';
    for (const n of names) if (n.startsWith('--') && a.startsWith(`${n}=`)) return a.slice(n.length + 1);
  }
  return undefined;
}

function checkEnvName(name: string): void {
  if (DANGEROUS_ENV.test(name)) {
    throw new Refusal(`setting ${name} can make a program load or run other code, so the command cannot be proven safe`);
  }
}

/** `env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=VALUE]... [COMMAND]`. */
function skipEnv(args: string[], walk: Walk, depth: number): number {
  let i = 0;
  while (i < args.length) {
    const a = args[i] as string;
    if (a === '--') {
      i++;
      continue;
    }
    if (a === '-S' || a === '--split-string' || a.startsWith('--split-string=') || /^-[a-zA-Z]*S/.test(a)) {
      const s = a.startsWith('--split-string=') ? a.slice(15) : a === '-S' || a === '--split-string' ? (args[i + 1] ?? '') : a.slice(a.indexOf('S') + 1) || (args[i + 1] ?? '');
      const inner = [...toArgv(s), ...args.slice(i + (a === '-S' || a === '--split-string' || a.endsWith('S') ? 2 : 1))];
      visitArgv(inner.map((value) => ({ value, dynamic: false })), walk, depth + 1);
      return args.length;
    }
    if (['-u', '--unset', '-C', '--chdir', '-P'].includes(a)) {
      i += 2;
      continue;
    }
    if (a.startsWith('-')) {
      i++;
      continue;
    }
    const eq = a.indexOf('=');
    if (eq > 0) {
      checkEnvName(a.slice(0, eq));
      i++;
      continue;
    }
    return i;
  }
  return i;
}

// ------------------------------------------------------------------ shells

function visitScript(code: string, walk: Walk, depth: number): void {
  if (depth > MAX_DEPTH) throw new Refusal('the command nests shells too deeply to be checked, so it cannot be proven safe');
  const script = parseShellScript(code, depth);
  for (const a of script.assignments) checkEnvName(a);
  for (const cmd of script.commands) visitArgv(cmd, walk, depth + 1);
  for (const s of script.substitutions) visitScript(s, walk, depth + 1);
}

function visitShell(name: string, rest: Word[], walk: Walk, depth: number): void {
  const args = plain(rest);
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '--' || !a.startsWith('-') && !a.startsWith('+')) return; // a script file (not inspected) or nothing
    if (a === '-o' || a === '+o' || a === '-O' || a === '+O' || a === '--rcfile' || a === '--init-file') {
      i++;
      continue;
    }
    if (/^-[a-zA-Z]*c[a-zA-Z]*$/.test(a)) {
      const code = rest[i + 1];
      if (!code) throw new Refusal(`"${name} -c" without code`);
      if (code.dynamic) throw new Refusal(`the code given to "${name} -c" is only known when a shell expands it, so the command cannot be proven safe`);
      return visitScript(code.value, walk, depth + 1);
    }
  }
}

// ------------------------------------------------------------------ interpreters

function inlineCode(name: string, args: string[]): string[] | undefined {
  const out: string[] = [];
  const flags =
    /^(node|nodejs|bun)$/.test(name) ? ['-e', '--eval', '-p', '--print', '-pe', '-ep']
    : /^deno$/.test(name) ? ['eval']
    : /^(python|pypy)/.test(name) ? ['-c']
    : /^(perl|ruby)/.test(name) ? ['-e', '-E']
    : /^php/.test(name) ? ['-r', '-B', '-R', '-E']
    : /^lua/.test(name) ? ['-e']
    : /^(pwsh|powershell)$/.test(name) ? ['-c', '-command', '-com', '-comm', '-comma', '-comman', '-cmd']
    : /^osascript$/.test(name) ? ['-e']
    : /^(awk|gawk|mawk|nawk)$/.test(name) ? []
    : ['-e', '-c'];
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    const lower = a.toLowerCase();
    if (/^(pwsh|powershell)$/.test(name) && /^-(e|ec|en|enc|encodedcommand|encodedc)/.test(lower) && !lower.startsWith('-ex')) {
      throw new Refusal(`"${name} ${a}" runs base64-encoded code, which cannot be proven safe`);
    }
    if (/^(pwsh|powershell)$/.test(name) && (lower === '-f' || lower === '-file')) return out.length ? out : undefined;
    const eq = a.indexOf('=');
    if (eq > 0 && flags.includes(a.slice(0, eq))) {
      out.push(a.slice(eq + 1));
      continue;
    }
    if (flags.includes(lower) || (/^-[a-zA-Z]+$/.test(a) && flags.some((f) => f.length === 2 && a.endsWith(f[1] as string) && /^(python|pypy|perl|ruby)/.test(name)))) {
      out.push(args[i + 1] ?? '');
      i++;
      if (/^(pwsh|powershell)$/.test(name)) {
        out[out.length - 1] = args.slice(i).join(' ');
        break;
      }
      continue;
    }
  }
  if (/^(awk|gawk|mawk|nawk)$/.test(name)) {
    const at = skipOptions(args, ['-f', '-v', '-F', '--file', '--assign', '--field-separator']);
    if (args.slice(0, at).some((a) => a === '-f' || a === '--file')) return undefined;
    if (args[at] !== undefined) out.push(args[at] as string);
  }
  return out.length ? out : undefined;
}

/** String literals of code ('...', "...", `...` without substitutions). */
function literals(code: string): string[] {
  const out: string[] = [];
  const re = /'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|`([^`]*)`/g;
  for (const m of code.matchAll(re)) out.push(m[1] ?? m[2] ?? m[3] ?? '');
  return out;
}

function visitInterpreter(name: string, rest: Word[], walk: Walk, depth: number): void {
  if (rest.some((w) => w.dynamic)) {
    throw new Refusal(`the arguments of "${name}" are only known when a shell expands them, so the command cannot be proven safe`);
  }
  const args = plain(rest);
  const codes = inlineCode(name, args);
  if (!codes) return; // a script file or a REPL with no input: not inspected (documented)
  for (const code of codes) {
    if (DYNAMIC_CODE.test(code)) {
      throw new Refusal(`the inline ${name} code builds or decodes what it runs at run time, so it cannot be proven safe`);
    }
    // Every word of the code is a candidate program: a denied name anywhere in it is refused.
    for (const word of code.split(/[^A-Za-z0-9_.+-]+/)) if (word) walk.builtins.add(programName(word));
    if (DELETES.test(code)) walk.builtins.add('rm');
    if (/^(awk|gawk|mawk|nawk)$/.test(name) && /\bsystem\s*\(|\|\s*getline|print[^;]*\|/.test(code)) {
      throw new Refusal(`the ${name} program runs shell commands, which cannot be proven safe`);
    }
    if (/^(pwsh|powershell)$/.test(name)) {
      visitPowerShell(code, walk);
      continue;
    }
    if (SPAWNS.test(code)) {
      const lits = literals(code).filter((l) => l.trim() !== '' && !NOT_COMMANDS.test(l.trim()));
      const perlTicks = /^(perl|ruby)/.test(name) ? [...code.matchAll(/`([^`]*)`|qx\s*[{(/]([^})/]*)[})/]|%x[{(]([^})]*)[})]/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? '') : [];
      if (lits.length === 0 && perlTicks.length === 0) {
        throw new Refusal(`the inline ${name} code starts programs whose names are not written in it, so it cannot be proven safe`);
      }
      // The strings a spawning call receives may be shell code (exec, system, shell=True): check them as such.
      for (const l of [...lits, ...perlTicks]) {
        try {
          visitScript(l, walk, depth + 1);
        } catch (e) {
          if (e instanceof Refusal) throw new Refusal(`the inline ${name} code starts programs: ${e.message}`);
          throw e;
        }
      }
    }
  }
}

const PS_DELETE = /^(remove-item|ri|rm|rmdir|rd|del|erase|clear-content|clc|format-volume|stop-computer|restart-computer)$/i;

function visitPowerShell(code: string, walk: Walk): void {
  if (/&\s*\$|\.\s*\$|\bStart-Process\b|\bsaps\b|\bInvoke-Command\b|\bicm\b|\[scriptblock\]|\bInvoke-Item\b|\bii\b/i.test(code)) {
    throw new Refusal('the PowerShell code starts programs or script blocks it builds at run time, so it cannot be proven safe');
  }
  for (const stmt of code.split(/[;|&\n{}()]+/)) {
    const first = stmt.trim().split(/\s+/)[0];
    if (!first) continue;
    if (first.startsWith('$')) continue; // an assignment or expression
    if (PS_DELETE.test(first)) {
      walk.builtins.add('rm');
      walk.builtins.add(programName(first));
      continue;
    }
    walk.builtins.add(programName(first.replace(/^['"]|['"]$/g, '')));
  }
}

// ------------------------------------------------------------------ find, git, npm

function visitFind(rest: Word[], walk: Walk, depth: number): void {
  const args = plain(rest);
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '-delete') {
      walk.builtins.add('rm'); // deleting files is what rm does: refused when rm is denied
      continue;
    }
    if (a === '-exec' || a === '-execdir' || a === '-ok' || a === '-okdir') {
      let j = i + 1;
      while (j < args.length && args[j] !== ';' && args[j] !== '+' && args[j] !== '\\;') j++;
      const cmd = rest.slice(i + 1, j);
      if (cmd.length === 0) throw new Refusal(`"find ${a}" without a command`);
      visitArgv(cmd, walk, depth + 1);
      i = j;
    }
    if (a === '-fprint' || a === '-fprintf' || a === '-fls' || a === '-fprint0') {
      // writes a file; not a program
      i++;
    }
  }
}

/** git configuration that names a program (or an alias, which can be `!shell code`). */
const GIT_PROGRAM_CONFIG =
  /^(alias\..+|core\.(sshcommand|editor|pager|askpass|fsmonitor|hookspath|gitproxy|sshcommand)|.*\.(cmd|command|program|tool|path)|sequence\.editor|diff\.external|diff\..+\.textconv|filter\..+|credential\..*helper|credential\.helper|gpg\..*|ssh\.variant|uploadpack\..*|receivepack\..*|remote\..+\.(uploadpack|receivepack|vcs)|protocol\..*|include\.path|includeif\..*|init\.templatedir|http\..*proxy.*|pager\..+|interactive\.difffilter|web\.browser|browser\..+|man\..+|merge\..+\.driver|mergetool\..*|difftool\..*|url\..+)$/i;

function visitGit(rest: Word[], walk: Walk, depth: number): void {
  if (rest.some((w) => w.dynamic)) throw new Refusal('the arguments of "git" are only known when a shell expands them, so the command cannot be proven safe');
  const args = plain(rest);
  let i = 0;
  for (; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '-c') {
      const kv = args[i + 1] ?? '';
      const key = kv.split('=')[0] ?? '';
      if (GIT_PROGRAM_CONFIG.test(key)) throw new Refusal(`"git -c ${key}=..." makes git run a program or alias, so the command cannot be proven safe`);
      i++;
      continue;
    }
    if (a.startsWith('--config-env') || a.startsWith('--exec-path') || a === '--upload-pack' || a.startsWith('--upload-pack=')) {
      throw new Refusal(`"git ${a}" makes git run a program, so the command cannot be proven safe`);
    }
    if (a === '-C' || a === '--git-dir' || a === '--work-tree' || a === '--namespace') {
      i++;
      continue;
    }
    if (!a.startsWith('-')) break;
  }
  const sub = args[i];
  const tail = args.slice(i + 1);
  if (sub === undefined) return;
  if (sub === 'submodule' && tail.includes('foreach')) {
    const code = tail.slice(tail.indexOf('foreach') + 1).filter((a) => !a.startsWith('--')).join(' ');
    return visitScript(code, walk, depth + 1);
  }
  if (sub === 'bisect' && tail[0] === 'run') {
    return visitArgv(tail.slice(1).map((value) => ({ value, dynamic: false })), walk, depth + 1);
  }
  if (sub === 'rebase' || sub === 'filter-branch' || sub === 'difftool' || sub === 'mergetool' || sub === 'config') {
    for (let j = 0; j < tail.length; j++) {
      const a = tail[j] as string;
      if (a === '-x' || a === '--exec') {
        visitScript(tail[j + 1] ?? '', walk, depth + 1);
        j++;
      } else if (a.startsWith('--exec=')) visitScript(a.slice(7), walk, depth + 1);
      else if (sub === 'filter-branch' && /^--.*-filter$/.test(a)) throw new Refusal('"git filter-branch" runs shell filters, which are not analysed, so the command cannot be proven safe');
      else if ((sub === 'difftool' || sub === 'mergetool') && (a === '-x' || a.startsWith('--extcmd') || a.startsWith('--tool'))) throw new Refusal(`"git ${sub} ${a}" runs a program, so the command cannot be proven safe`);
    }
    if (sub === 'config') {
      const key = tail.find((a) => !a.startsWith('-'));
      const setting = tail.filter((a) => !a.startsWith('-')).length >= 2;
      if (key && setting && GIT_PROGRAM_CONFIG.test(key)) throw new Refusal(`"git config ${key}" would make git run a program later, so the command cannot be proven safe`);
    }
  }
}

/** `@scope/pkg@1.2` -> the bin name npx would run (`pkg`). */
function packageBin(spec: string): string {
  let s = spec;
  if (s.startsWith('@')) s = s.slice(s.indexOf('/') + 1);
  const at = s.indexOf('@');
  if (at > 0) s = s.slice(0, at);
  return s;
}

/** Packages whose only job is to delete files: they count as `rm`. */
const DELETING_PACKAGES = new Set(['rimraf', 'del-cli', 'trash-cli', 'rmrf', 'premove', 'shx']);

function visitNpx(name: string, rest: Word[], walk: Walk, depth: number): void {
  if (rest.some((w) => w.dynamic)) throw new Refusal(`the arguments of "${name}" are only known when a shell expands them, so the command cannot be proven safe`);
  const args = plain(rest);
  const packages: string[] = [];
  let i = 0;
  for (; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '-c' || a === '--call') return visitScript(args[i + 1] ?? '', walk, depth + 1);
    if (a.startsWith('--call=')) return visitScript(a.slice(7), walk, depth + 1);
    if (a === '-p' || a === '--package') {
      packages.push(args[i + 1] ?? '');
      i++;
      continue;
    }
    if (a.startsWith('--package=')) {
      packages.push(a.slice(10));
      continue;
    }
    if (a === '--') {
      i++;
      break;
    }
    if (!a.startsWith('-')) break;
  }
  const bin = args[i];
  for (const p of packages) visitPackage(p, walk);
  if (bin !== undefined) {
    visitPackage(bin, walk);
    // `npx shx rm -rf x`, `npx cross-env X=1 rm ...`: the package's own arguments may name a program too.
    for (const a of args.slice(i + 1)) if (!a.startsWith('-')) walk.builtins.add(programName(a));
  }
}

function visitPackage(spec: string, walk: Walk): void {
  const bin = programName(packageBin(spec));
  if (!bin) throw new Refusal('npx without a package name');
  walk.builtins.add(bin);
  if (DELETING_PACKAGES.has(bin)) walk.builtins.add('rm');
}

function visitNpm(name: string, rest: Word[], walk: Walk, depth: number): void {
  const args = plain(rest);
  const sub = args.find((a) => !a.startsWith('-'));
  if (sub === 'exec' || sub === 'x' || (name === 'pnpm' && sub === 'dlx') || (name === 'yarn' && sub === 'dlx')) {
    const tail = args.slice(args.indexOf(sub) + 1);
    return visitNpx('npx', tail.map((value) => ({ value, dynamic: rest.some((w) => w.dynamic) })), walk, depth);
  }
  if (args.some((a) => a.startsWith('--script-shell') || a.startsWith('--shell') || a.startsWith('--node-options'))) {
    throw new Refusal(`"${name}" with a custom shell or node options cannot be proven safe`);
  }
}
