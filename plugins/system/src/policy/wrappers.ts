/**
 * Programs that run their arguments as another program (`env`, `nice`, `timeout`, `sudo`, `xargs`, ...): the
 * rule finds where the wrapped command starts and walks it.
 */
import { Refusal, toArgv } from '../tokenize.js';
import { checkEnvName, optionValue, plain, type ProgramRule, runsFrom, skipOptions, staticArgs, type Visitor } from './walk.js';

/** `env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=VALUE]... [COMMAND]`: index of COMMAND. */
function skipEnv(args: string[], v: Visitor): number {
  let i = 0;
  while (i < args.length) {
    const a = args[i] as string;
    if (a === '--') {
      i++;
      continue;
    }
    if (a === '-S' || a === '--split-string' || a.startsWith('--split-string=') || /^-[a-zA-Z]*S/.test(a)) {
      const s = a.startsWith('--split-string=')
        ? a.slice(15)
        : a === '-S' || a === '--split-string'
          ? (args[i + 1] ?? '')
          : a.slice(a.indexOf('S') + 1) || (args[i + 1] ?? '');
      const inner = [...toArgv(s), ...args.slice(i + (a === '-S' || a === '--split-string' || a.endsWith('S') ? 2 : 1))];
      v.argv(
        inner.map((value) => ({ value, dynamic: false })),
        v.depth + 1,
      );
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

function hasCommandAfterOptions(args: string[]): boolean {
  return skipOptions(args, ['-u', '-g', '-C', '-D', '-p', '-r', '-t', '-U', '-T', '-h']) < args.length;
}

/** A wrapper whose command follows its options (`withValue`: options that take a value). */
const afterOptions =
  (withValue: string[], alsoFlag?: RegExp): ProgramRule =>
  (name, rest, v) => {
    staticArgs(name, rest);
    runsFrom(rest, skipOptions(plain(rest), withValue, alsoFlag), v);
  };

/** A wrapper with one positional argument (a duration, a priority, a lock file) before its command. */
const afterOptionsAndOne =
  (withValue: string[]): ProgramRule =>
  (name, rest, v) => {
    staticArgs(name, rest);
    runsFrom(rest, skipOptions(plain(rest), withValue) + 1, v);
  };

const runsShellCode =
  (options: string[], withoutCode: string): ProgramRule =>
  (name, rest, v) => {
    staticArgs(name, rest);
    const c = optionValue(plain(rest), options);
    if (c === undefined) throw new Refusal(`"${name}" ${withoutCode}, which cannot be proven safe`);
    v.script(c, v.depth + 1);
  };

const sudo: ProgramRule = (name, rest, v) => {
  staticArgs(name, rest);
  const args = plain(rest);
  if (args.some((a) => /^-[a-zA-Z]*[si]$/.test(a) || a === '--shell' || a === '--login')) {
    if (!hasCommandAfterOptions(args)) throw new Refusal(`"${name} -s/-i" opens a shell, which cannot be proven safe`);
  }
  if (args.includes('-e') || args.includes('--edit')) return;
  runsFrom(
    rest,
    skipOptions(args, [
      '-u',
      '--user',
      '-g',
      '--group',
      '-C',
      '--close-from',
      '-D',
      '--chdir',
      '-p',
      '--prompt',
      '-r',
      '--role',
      '-t',
      '--type',
      '-U',
      '--other-user',
      '-T',
      '--command-timeout',
      '-h',
      '--host',
    ]),
    v,
  );
};

const namespaces = afterOptions(['-t', '--target', '-g', '-m', '-p', '-N', '-C', '-S', '-G']);
const tracers = afterOptions(['-o', '-e', '-p', '-s', '-u', '-E', '-a', '-b', '-I', '-P', '-X', '--output', '--args']);
const runsNext = afterOptions(['-a']);

export const WRAPPER_RULES: Record<string, ProgramRule> = {
  env(name, rest, v) {
    staticArgs(name, rest);
    runsFrom(rest, skipEnv(plain(rest), v), v);
  },
  nice: afterOptions(['-n', '--adjustment'], /^-\d+$/),
  nohup: runsNext,
  setsid: runsNext,
  command: runsNext,
  exec: runsNext,
  builtin: runsNext,
  unbuffer: runsNext,
  caffeinate: runsNext,
  catchsegv: runsNext,
  time: afterOptions(['-f', '--format', '-o', '--output']),
  timeout: afterOptionsAndOne(['-s', '--signal', '-k', '--kill-after']),
  stdbuf: afterOptions(['-i', '-o', '-e', '--input', '--output', '--error']),
  ionice: afterOptions(['-c', '--class', '-n', '--classdata', '-p', '--pid', '-P', '--pgid', '-u', '--uid']),
  taskset(name, rest, v) {
    staticArgs(name, rest);
    const args = plain(rest);
    const at = skipOptions(args, []);
    if (args.slice(0, at).some((a) => a === '-p' || a === '--pid' || /^-[a-z]*p/.test(a))) return;
    runsFrom(rest, at + 1, v); // the cpu mask
  },
  chrt: afterOptionsAndOne(['-T', '-P', '-D']),
  nsenter: namespaces,
  unshare: namespaces,
  numactl: namespaces,
  prlimit: namespaces,
  cgexec: namespaces,
  sudo,
  doas: sudo,
  pkexec: sudo,
  runas: sudo,
  su: runsShellCode(['-c', '--command', '--session-command'], 'opens a shell as another user'),
  runuser: runsShellCode(['-c', '--command', '--session-command'], 'opens a shell as another user'),
  chroot(name, rest, v) {
    staticArgs(name, rest);
    const args = plain(rest);
    const at = skipOptions(args, ['--userspec', '--groups']);
    if (at + 1 >= args.length) throw new Refusal('"chroot" without a command opens a shell, which cannot be proven safe');
    runsFrom(rest, at + 1, v);
  },
  xargs: afterOptions([
    '-a',
    '--arg-file',
    '-d',
    '--delimiter',
    '-E',
    '-e',
    '--eof',
    '-I',
    '-i',
    '--replace',
    '-L',
    '-l',
    '--max-lines',
    '-n',
    '--max-args',
    '-P',
    '--max-procs',
    '-s',
    '--max-chars',
    '--process-slot-var',
  ]),
  parallel() {
    throw new Refusal('"parallel" builds its commands from its input, so the command cannot be proven safe');
  },
  watch(name, rest, v) {
    staticArgs(name, rest);
    const args = plain(rest);
    const at = skipOptions(args, ['-n', '--interval', '-d', '--differences', '-q', '--equexit', '--chgexit']);
    const sub = args.slice(at);
    if (args.slice(0, at).some((a) => a === '-x' || a === '--exec' || /^-[a-z]*x/.test(a))) return runsFrom(rest, at, v);
    if (sub.length) v.script(sub.join(' '), v.depth + 1);
  },
  strace: tracers,
  ltrace: tracers,
  valgrind: tracers,
  gdb: tracers,
  perf: tracers,
  flock(name, rest, v) {
    staticArgs(name, rest);
    const args = plain(rest);
    const c = optionValue(args, ['-c', '--command']);
    if (c !== undefined) return v.script(c, v.depth + 1);
    runsFrom(rest, skipOptions(args, ['-w', '--timeout', '-E', '--conflict-exit-code']) + 1, v); // the lock file
  },
  script: runsShellCode(['-c', '--command'], 'without -c opens a shell'),
  busybox(name, rest, v) {
    staticArgs(name, rest);
    runsFrom(rest, 0, v);
  },
  toybox(name, rest, v) {
    staticArgs(name, rest);
    runsFrom(rest, 0, v);
  },
  cmd(_name, rest, v) {
    const args = plain(rest);
    const at = args.findIndex((a) => /^\/[ck]$/i.test(a));
    if (at >= 0) v.script(args.slice(at + 1).join(' '), v.depth + 1);
  },
  // Runs on another machine: only the local program is checked (documented).
  ssh() {},
};
