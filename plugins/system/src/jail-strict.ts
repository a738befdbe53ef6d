/**
 * `commandIsolation: strict`: inside the jail nothing can be started from a place the command can write. Every
 * writable mount is remounted `noexec`; the folders programs come from (the system folders, the folders searched
 * for programs, and the folders their links lead to, a whole `node_modules` at a time) are bound over themselves
 * read-only, so they still run but cannot be added to. That closes what the stubs alone cannot: a program with a denied
 * program's bytes obtained another way (downloaded, extracted from a package, read from the raw disk) and run
 * from a writable place, also through the dynamic loader (`ld.so ./x` maps it executable, which noexec refuses).
 * As real root the jail also sets `vm.memfd_noexec = 2` for its pid namespace (code run from memory).
 * `commandIsolation: auto` is strict wherever sdk/command-isolation.ts finds it can be set up.
 */
import { lstatSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { under } from '../../../sdk/command-isolation.js';

export { memfdNoexecKnown, writableMounts } from '../../../sdk/command-isolation.js';

const SYSTEM_EXEC = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/opt', '/snap'];

function realDir(p: string): string | undefined {
  try {
    const r = realpathSync(p);
    return statSync(r).isDirectory() ? r : undefined;
  } catch {
    return undefined;
  }
}

/** The nearest `node_modules` above a file, or its folder. */
function home(file: string): string {
  const parts = file.split(sep);
  const at = parts.lastIndexOf('node_modules');
  return at > 0 ? parts.slice(0, at + 1).join(sep) : dirname(file);
}

/** Folders that keep running programs (read-only), outermost only. */
export function execDirs(searched: string[]): string[] {
  const found = new Set<string>();
  for (const d of [...SYSTEM_EXEC, ...searched]) {
    const r = realDir(d);
    if (r) found.add(r);
  }
  for (const d of searched) {
    let names: string[] = [];
    try {
      names = readdirSync(d);
    } catch {
      continue;
    }
    for (const n of names) {
      const p = join(d, n);
      try {
        if (!lstatSync(p).isSymbolicLink()) continue;
        const target = realpathSync(p);
        if (![...found].some((f) => under(target, f))) found.add(home(target));
      } catch {
        /* a dangling link */
      }
    }
  }
  const sorted = [...found].sort((a, b) => a.length - b.length);
  return sorted.filter((d, i) => d !== '/' && !sorted.slice(0, i).some((o) => o !== d && under(d, o)));
}
