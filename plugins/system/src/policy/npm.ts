/** `npx` (and `bunx`, `pnpx`, `npm exec`, `pnpm dlx`, `yarn dlx`): the package run counts as a program. */
import { Refusal, type Word } from '../tokenize.js';
import { plain, type ProgramRule, programName, type Visitor } from './walk.js';

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

function visitPackage(spec: string, v: Visitor): void {
  const bin = programName(packageBin(spec));
  if (!bin) throw new Refusal('npx without a package name');
  v.walk.builtins.add(bin);
  if (DELETING_PACKAGES.has(bin)) v.walk.builtins.add('rm');
}

export const npxRule: ProgramRule = (name, rest, v) => {
  if (rest.some((w) => w.dynamic))
    throw new Refusal(`the arguments of "${name}" are only known when a shell expands them, so the command cannot be proven safe`);
  const args = plain(rest);
  const packages: string[] = [];
  let i = 0;
  for (; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '-c' || a === '--call') return v.script(args[i + 1] ?? '', v.depth + 1);
    if (a.startsWith('--call=')) return v.script(a.slice(7), v.depth + 1);
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
  for (const p of packages) visitPackage(p, v);
  if (bin !== undefined) {
    visitPackage(bin, v);
    // `npx shx rm -rf x`, `npx cross-env X=1 rm ...`: the package's own arguments may name a program too.
    for (const a of args.slice(i + 1)) if (!a.startsWith('-')) v.walk.builtins.add(programName(a));
  }
};

export const npmRule: ProgramRule = (name, rest, v) => {
  const args = plain(rest);
  const sub = args.find((a) => !a.startsWith('-'));
  if (sub === 'exec' || sub === 'x' || (name === 'pnpm' && sub === 'dlx') || (name === 'yarn' && sub === 'dlx')) {
    const tail = args.slice(args.indexOf(sub) + 1);
    const words: Word[] = tail.map((value) => ({ value, dynamic: rest.some((w) => w.dynamic) }));
    return npxRule('npx', words, v);
  }
  if (args.some((a) => a.startsWith('--script-shell') || a.startsWith('--shell') || a.startsWith('--node-options'))) {
    throw new Refusal(`"${name}" with a custom shell or node options cannot be proven safe`);
  }
};
