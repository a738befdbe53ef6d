/** Shells: `bash -c CODE` (and `sh`, `zsh`, ...) is parsed and every command in it walked; a script file is not read. */
import { Refusal } from '../tokenize.js';
import { plain, type ProgramRule } from './walk.js';

export const SHELL = /^(bash|sh|zsh|dash|ksh|mksh|ash|yash|fish|tcsh|csh|rbash|posh)$/;

export const shellRule: ProgramRule = (name, rest, v) => {
  const args = plain(rest);
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '--' || (!a.startsWith('-') && !a.startsWith('+'))) return; // a script file (not inspected) or nothing
    if (a === '-o' || a === '+o' || a === '-O' || a === '+O' || a === '--rcfile' || a === '--init-file') {
      i++;
      continue;
    }
    if (/^-[a-zA-Z]*c[a-zA-Z]*$/.test(a)) {
      const code = rest[i + 1];
      if (!code) throw new Refusal(`"${name} -c" without code`);
      if (code.dynamic)
        throw new Refusal(`the code given to "${name} -c" is only known when a shell expands it, so the command cannot be proven safe`);
      return v.script(code.value, v.depth + 1);
    }
  }
};
