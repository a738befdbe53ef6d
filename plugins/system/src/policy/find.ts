/** `find`: `-exec`/`-execdir`/`-ok`/`-okdir` run a command (walked); `-delete` counts as `rm`. */
import { Refusal } from '../tokenize.js';
import { plain, type ProgramRule } from './walk.js';

export const findRule: ProgramRule = (_name, rest, v) => {
  const args = plain(rest);
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '-delete') {
      v.walk.builtins.add('rm'); // deleting files is what rm does: refused when rm is denied
      continue;
    }
    if (a === '-exec' || a === '-execdir' || a === '-ok' || a === '-okdir') {
      let j = i + 1;
      while (j < args.length && args[j] !== ';' && args[j] !== '+' && args[j] !== '\\;') j++;
      const cmd = rest.slice(i + 1, j);
      if (cmd.length === 0) throw new Refusal(`"find ${a}" without a command`);
      v.argv(cmd, v.depth + 1);
      i = j;
    }
    if (a === '-fprint' || a === '-fprintf' || a === '-fls' || a === '-fprint0') {
      // writes a file; not a program
      i++;
    }
  }
};
