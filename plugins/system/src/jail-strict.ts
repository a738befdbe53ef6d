/**
 * `commandIsolation: strict`: inside the jail nothing can be started from a place the command can write. Every
 * writable mount is remounted `noexec`; the folders programs come from (the system folders, the folders searched
 * for programs, and the folders their links lead to, a whole `node_modules` at a time) are bound over themselves
 * read-only, so they still run but cannot be added to. That closes what `auto` cannot: a program with a denied
 * program's bytes obtained another way (downloaded, extracted from a package, read from the raw disk) and run
 * from a writable place, also through the dynamic loader (`ld.so ./x` maps it executable, which noexec refuses).
 * As real root the jail also sets `vm.memfd_noexec = 2` for its pid namespace (code run from memory).
 */
import { lstatSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';
import { type Mount, mounts, under } from './jail-scan.js';

const SYSTEM_EXEC = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/opt', '/snap'];

/** Filesystems that hold no files a command could create and run. */
const NO_FILES = new Set([
  'proc',
  'sysfs',
  'cgroup',
  'cgroup2',
  'devpts',
  'mqueue',
  'debugfs',
  'tracefs',
  'securityfs',
  'pstore',
  'bpf',
  'configfs',
  'fusectl',
  'binfmt_misc',
  'autofs',
  'efivarfs',
  'nsfs',
  'rpc_pipefs',
]);

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

/** Writable mounts to remount noexec, with the options to keep (a user namespace may not drop locked ones). */
export function writableMounts(all: Mount[] = mounts()): Array<{ point: string; options: string }> {
  const top = new Map<string, Mount>();
  for (const m of all) top.set(m.point, m); // the last mount at a point is the one visible there
  const out: Array<{ point: string; options: string }> = [];
  for (const m of top.values()) {
    const opts = m.options.split(',');
    if (NO_FILES.has(m.type) || !opts.includes('rw') || opts.includes('noexec')) continue;
    if (under(m.point, '/proc') || under(m.point, '/sys')) continue;
    out.push({
      point: m.point,
      options: [
        'remount',
        'bind',
        'noexec',
        ...opts.filter((o) => /^(rw|nosuid|nodev|noatime|nodiratime|relatime|strictatime)$/.test(o)),
      ].join(','),
    });
  }
  return out;
}

/** `true` when the kernel lets a pid namespace forbid executing memory file descriptors (Linux 6.3+). */
export function memfdNoexecKnown(): boolean {
  try {
    return statSync('/proc/sys/vm/memfd_noexec').isFile();
  } catch {
    return false;
  }
}
