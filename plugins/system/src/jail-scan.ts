/**
 * Where the programs on commandDenyList live on this machine: every path that would start one, found by name
 * (in PATH and the usual system folders, which is what `which -a` searches), by inode (hard links under other
 * names), by content (byte-identical copies under other names), by applet (busybox/toybox carrying a denied
 * applet) and by mount (the same file seen through another mount of its filesystem). deny-jail.ts binds a stub
 * over each path found. What cannot be covered is returned as a note, never silently dropped.
 */
import { execFileSync } from 'node:child_process';
import { lstatSync, readdirSync, readFileSync, realpathSync, statSync, type Stats } from 'node:fs';
import { basename, delimiter, isAbsolute, join, relative } from 'node:path';
import { type Mount, mounts, under } from '../../../sdk/command-isolation.js';
import { deniedBy, programName } from './command-policy.js';

export { type Mount, mounts, under } from '../../../sdk/command-isolation.js';

/** Folders searched besides PATH (programs that are not on PATH are still started by absolute path). */
export const SYSTEM_DIRS = [
  '/usr/local/sbin',
  '/usr/local/bin',
  '/usr/sbin',
  '/usr/bin',
  '/sbin',
  '/bin',
  '/usr/games',
  '/usr/local/games',
  '/usr/libexec',
  '/snap/bin',
  '/opt/bin',
];

export interface JailTarget {
  /** The file to bind the stub over (a real path, not a symlink). */
  path: string;
  /** The denied program it is (shown by the stub). */
  program: string;
  /** How it was found: `name`, `hard link`, `copy`, `applet`, `mount view`. */
  why: string;
}

export interface ScanResult {
  targets: JailTarget[];
  /** What is reachable but not replaced, and why (shown in results and docs). */
  notes: string[];
  /** Folders searched (real paths). */
  dirs: string[];
}

interface FileInfo {
  id: string;
  size: number;
  nlink: number;
  /** Real paths of this inode found in the folders (hard-link names). */
  reals: Set<string>;
  /** Names (as found in the folders, symlinks included) that lead to it. */
  names: Set<string>;
}

const MULTI_CALL = /^(busybox|toybox)/;
const appletCache = new Map<string, string[]>();

/** The applets a busybox/toybox binary carries (empty when it cannot be asked). */
function applets(path: string, st: Stats): string[] {
  const key = `${st.dev}:${st.ino}:${st.mtimeMs}`;
  const hit = appletCache.get(key);
  if (hit) return hit;
  let list: string[] = [];
  try {
    const args = /toybox/.test(basename(path)) ? [] : ['--list'];
    list = execFileSync(path, args, { encoding: 'utf8', timeout: 3000, stdio: ['ignore', 'pipe', 'ignore'] })
      .split(/\s+/)
      .filter(Boolean);
  } catch {
    list = [];
  }
  appletCache.set(key, list);
  return list;
}

export function searchDirs(pathVar: string | undefined): string[] {
  const out: string[] = [];
  for (const d of [...(pathVar ?? '').split(delimiter), ...SYSTEM_DIRS]) {
    if (!d || !isAbsolute(d)) continue;
    try {
      const real = realpathSync(d);
      if (statSync(real).isDirectory() && !out.includes(real)) out.push(real);
    } catch {
      /* not there */
    }
  }
  return out;
}

/** Other paths the same file is visible at, through other mounts of its filesystem. */
function otherViews(path: string, all: Mount[]): string[] {
  const visible = all.filter((m) => under(path, m.point)).sort((a, b) => b.point.length - a.point.length)[0];
  if (!visible) return [];
  const inFs = join(visible.root, relative(visible.point, path));
  const out: string[] = [];
  for (const m of all) {
    if (m === visible || m.dev !== visible.dev || !under(inFs, m.root)) continue;
    out.push(join(m.point, relative(m.root, inFs)));
  }
  return out;
}

function sameFile(a: string, b: Stats): boolean {
  try {
    const s = statSync(a);
    return s.dev === b.dev && s.ino === b.ino;
  } catch {
    return false;
  }
}

export function scanDenied(denyList: readonly string[], allowList: readonly string[], dirs: string[]): ScanResult {
  const deny = new Set(denyList.map(programName).filter(Boolean));
  const allow = new Set(allowList.map(programName).filter(Boolean));
  const files = new Map<string, FileInfo>();
  const bySize = new Map<number, FileInfo[]>();
  const notes: string[] = [];
  for (const dir of dirs) {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const n of names) {
      const p = join(dir, n);
      let st: Stats;
      let real: string;
      try {
        st = statSync(p);
        if (!st.isFile()) continue;
        real = lstatSync(p).isSymbolicLink() ? realpathSync(p) : p;
      } catch {
        continue;
      }
      const id = `${st.dev}:${st.ino}`;
      let f = files.get(id);
      if (!f) {
        f = { id, size: st.size, nlink: st.nlink, reals: new Set(), names: new Set() };
        files.set(id, f);
        const same = bySize.get(st.size) ?? [];
        same.push(f);
        bySize.set(st.size, same);
      }
      f.reals.add(real);
      f.names.add(p);
    }
  }

  const chosen = new Map<string, { f: FileInfo; program: string; why: string }>();
  for (const f of files.values()) {
    for (const name of f.names) {
      const prog = programName(basename(name));
      const hit = deniedBy(prog, deny);
      const real = [...f.reals][0] as string;
      const realName = programName(basename(real));
      if (hit !== undefined) {
        if (!deniedBy(realName, deny) && allow.has(realName)) {
          notes.push(
            `${name} leads to ${real}, and "${realName}" is on commandAllowList: it is not replaced (a denied name of an allowed program; the argv check still refuses "${prog}")`,
          );
          continue;
        }
        if (!chosen.has(f.id)) chosen.set(f.id, { f, program: hit, why: 'name' });
        break;
      }
      if (MULTI_CALL.test(realName) || MULTI_CALL.test(prog)) {
        const st = statSync(real);
        const denied = applets(real, st).filter((a) => deniedBy(programName(a), deny) !== undefined);
        if (denied.length && !chosen.has(f.id))
          chosen.set(f.id, { f, program: `${realName} (it carries ${denied.slice(0, 4).join(', ')})`, why: 'applet' });
      }
    }
  }

  // Byte-identical copies under other names, in the same folders.
  for (const { f, program } of [...chosen.values()]) {
    const twins = (bySize.get(f.size) ?? []).filter((o) => o !== f && !chosen.has(o.id));
    if (!twins.length) continue;
    let body: Buffer;
    try {
      body = readFileSync([...f.reals][0] as string);
    } catch {
      continue;
    }
    for (const o of twins) {
      try {
        if (readFileSync([...o.reals][0] as string).equals(body)) chosen.set(o.id, { f: o, program, why: 'copy' });
      } catch {
        /* unreadable: not executable by this user either */
      }
    }
  }

  const all = mounts();
  const targets: JailTarget[] = [];
  const seen = new Set<string>();
  const push = (path: string, program: string, why: string) => {
    if (seen.has(path)) return;
    seen.add(path);
    targets.push({ path, program, why });
  };
  for (const { f, program, why } of chosen.values()) {
    const reals = [...f.reals];
    reals.forEach((r, i) => push(r, program, i === 0 ? why : 'hard link'));
    if (f.nlink > reals.length) {
      notes.push(
        `${reals[0]} (${program}) has ${f.nlink} names on disk and only ${reals.length} ${reals.length === 1 ? 'is' : 'are'} in the folders searched: a hard link elsewhere is not replaced`,
      );
    }
    const st = statSync(reals[0] as string);
    for (const r of reals) for (const v of otherViews(r, all)) if (sameFile(v, st)) push(v, program, 'mount view');
  }
  return { targets, notes, dirs };
}
