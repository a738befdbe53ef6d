/**
 * `git`: options and configuration that name a program, aliases, and the subcommands that run shell code.
 * `git clean` (unless a dry run) and `git rm` (unless `--cached` or a dry run) count as `rm`, as `find -delete`
 * does: they delete files through an allowed program. `git clean` counts even without `-f`, because a
 * repository's own configuration can set `clean.requireForce=false`.
 */
import { Refusal } from '../tokenize.js';
import { plain, type ProgramRule } from './walk.js';

/** git configuration that names a program (or an alias, which can be `!shell code`). */
const GIT_PROGRAM_CONFIG =
  /^(alias\..+|core\.(sshcommand|editor|pager|askpass|fsmonitor|hookspath|gitproxy|sshcommand)|.*\.(cmd|command|program|tool|path)|sequence\.editor|diff\.external|diff\..+\.textconv|filter\..+|credential\..*helper|credential\.helper|gpg\..*|ssh\.variant|uploadpack\..*|receivepack\..*|remote\..+\.(uploadpack|receivepack|vcs)|protocol\..*|include\.path|includeif\..*|init\.templatedir|http\..*proxy.*|pager\..+|interactive\.difffilter|web\.browser|browser\..+|man\..+|merge\..+\.driver|mergetool\..*|difftool\..*|url\..+)$/i;

/** The options of `git clean`/`git rm` that make it delete nothing (up to `--`; `-e`/`--exclude` values skipped). */
function removalOptions(tail: string[]): { dryRun: boolean; cached: boolean } {
  const out = { dryRun: false, cached: false };
  for (let i = 0; i < tail.length; i++) {
    const a = tail[i] as string;
    if (a === '--') break;
    if (a === '-e' || a === '--exclude' || a === '--pathspec-from-file') i++;
    else if (a === '--dry-run') out.dryRun = true;
    else if (a === '--cached') out.cached = true;
    else if (/^-[a-zA-Z]+$/.test(a)) {
      // Clustered short options: `-e` takes the rest of the word (or the next word) as its pattern.
      const e = a.indexOf('e');
      const n = a.indexOf('n');
      if (n > 0 && (e < 0 || n < e)) out.dryRun = true;
      if (e === a.length - 1) i++;
    }
  }
  return out;
}

export const gitRule: ProgramRule = (_name, rest, v) => {
  if (rest.some((w) => w.dynamic))
    throw new Refusal('the arguments of "git" are only known when a shell expands them, so the command cannot be proven safe');
  const args = plain(rest);
  let i = 0;
  for (; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '-c') {
      const kv = args[i + 1] ?? '';
      const key = kv.split('=')[0] ?? '';
      if (GIT_PROGRAM_CONFIG.test(key))
        throw new Refusal(`"git -c ${key}=..." makes git run a program or alias, so the command cannot be proven safe`);
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
  if (sub === 'clean' || sub === 'rm') {
    const o = removalOptions(tail);
    if (!o.dryRun && !(sub === 'rm' && o.cached)) v.walk.builtins.add('rm'); // deletes files: what rm does
  }
  if (sub === 'submodule' && tail.includes('foreach')) {
    const code = tail
      .slice(tail.indexOf('foreach') + 1)
      .filter((a) => !a.startsWith('--'))
      .join(' ');
    return v.script(code, v.depth + 1);
  }
  if (sub === 'bisect' && tail[0] === 'run') {
    return v.argv(
      tail.slice(1).map((value) => ({ value, dynamic: false })),
      v.depth + 1,
    );
  }
  if (sub === 'rebase' || sub === 'filter-branch' || sub === 'difftool' || sub === 'mergetool' || sub === 'config') {
    for (let j = 0; j < tail.length; j++) {
      const a = tail[j] as string;
      if (a === '-x' || a === '--exec') {
        v.script(tail[j + 1] ?? '', v.depth + 1);
        j++;
      } else if (a.startsWith('--exec=')) v.script(a.slice(7), v.depth + 1);
      else if (sub === 'filter-branch' && /^--.*-filter$/.test(a))
        throw new Refusal('"git filter-branch" runs shell filters, which are not analysed, so the command cannot be proven safe');
      else if ((sub === 'difftool' || sub === 'mergetool') && (a === '-x' || a.startsWith('--extcmd') || a.startsWith('--tool')))
        throw new Refusal(`"git ${sub} ${a}" runs a program, so the command cannot be proven safe`);
    }
    if (sub === 'config') {
      const key = tail.find((a) => !a.startsWith('-'));
      const setting = tail.filter((a) => !a.startsWith('-')).length >= 2;
      if (key && setting && GIT_PROGRAM_CONFIG.test(key))
        throw new Refusal(`"git config ${key}" would make git run a program later, so the command cannot be proven safe`);
    }
  }
};
