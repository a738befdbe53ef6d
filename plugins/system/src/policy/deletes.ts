/**
 * Programs that delete files through an option, as `find -delete` does: `rsync --delete*` (and
 * `--remove-source-files`), `tar --remove-files` (and `--recursive-unlink`) count as `rm`, refused when `rm` is
 * denied. Long options are matched by any prefix, because getopt accepts unambiguous abbreviations
 * (`tar --remove-f`). The options of these programs that start another program are read as shell code.
 */
import { Refusal } from '../tokenize.js';
import { plain, type ProgramRule, staticArgs, type Visitor } from './walk.js';

/** Whether `arg` (`--name` or `--name=value`) is `full` or an abbreviation of it at least `min` characters long. */
function isLong(arg: string, full: string, min: number): boolean {
  const name = arg.split('=')[0] as string;
  return name.length >= min && full.startsWith(name);
}

/** The value of a long option given as `--name=value` or `--name value` (abbreviations included). */
function longValue(args: string[], i: number): string {
  const a = args[i] as string;
  const eq = a.indexOf('=');
  return eq >= 0 ? a.slice(eq + 1) : (args[i + 1] ?? '');
}

function runsCode(program: string, option: string, code: string, v: Visitor): void {
  if (code === '') throw new Refusal(`"${program} ${option}" without a command`);
  v.script(code, v.depth + 1);
}

export const rsyncRule: ProgramRule = (name, rest, v) => {
  staticArgs(name, rest); // `rsync $OPTS` could hide --delete
  const args = plain(rest);
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '--') break;
    if (a.startsWith('--del') || isLong(a, '--remove-source-files', 8) || isLong(a, '--remove-sent-files', 8)) {
      v.walk.builtins.add('rm'); // deleting files is what rm does
    } else if (a === '-e' || isLong(a, '--rsh', 4)) {
      runsCode(name, a, a === '-e' ? (args[i + 1] ?? '') : longValue(args, i), v);
      if (!a.includes('=')) i++;
    } else if (/^-[a-zA-Z]*e/.test(a) && !a.startsWith('--')) {
      // `-ae ssh`, `-essh`: the rest of the word, or the next word, is the remote shell
      const tail = a.slice(a.indexOf('e') + 1);
      runsCode(name, '-e', tail || (args[i + 1] ?? ''), v);
      if (!tail) i++;
    } else if (isLong(a, '--rsync-path', 5)) {
      runsCode(name, '--rsync-path', longValue(args, i), v);
      if (!a.includes('=')) i++;
    }
  }
};

/** tar's options that start a program (GNU tar runs them through the shell). */
const TAR_PROGRAM_OPTIONS = [
  '--to-command',
  '--use-compress-program',
  '--checkpoint-action',
  '--info-script',
  '--new-volume-script',
  '--rsh-command',
  '--rmt-command',
];

export const tarRule: ProgramRule = (name, rest, v) => {
  staticArgs(name, rest);
  const args = plain(rest);
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '--') break;
    if (isLong(a, '--remove-files', 5) || isLong(a, '--recursive-unlink', 5)) {
      v.walk.builtins.add('rm');
      continue;
    }
    const program = TAR_PROGRAM_OPTIONS.find((o) => isLong(a, o, 5));
    if (program) {
      const value = longValue(args, i);
      // --checkpoint-action=exec=CMD runs CMD; its other actions (dot, echo, ttyout ...) start nothing
      if (program !== '--checkpoint-action') runsCode(name, program, value, v);
      else if (value.startsWith('exec=')) runsCode(name, program, value.slice(5), v);
      if (!a.includes('=')) i++;
      continue;
    }
    if (a === '-I' || a === '-F') {
      runsCode(name, a, args[i + 1] ?? '', v);
      i++;
      continue;
    }
    // -I/-F inside a cluster (`-cIf`), or in the old style first word (`tar cIf ...`): where its value is depends
    // on the other letters, so it is not guessed.
    const cluster = (a.startsWith('-') && !a.startsWith('--')) || (i === 0 && !a.startsWith('-'));
    if (cluster && /[IF]/.test(a) && a.length > 2 && /^-?[a-zA-Z]+$/.test(a)) {
      throw new Refusal(`"tar ${a}" names a program to run (-I or -F) inside a group of options, so the command cannot be proven safe`);
    }
  }
};
