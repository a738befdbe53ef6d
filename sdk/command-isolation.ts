/**
 * What run_command's strict isolation needs from this machine (plugins/system, docs/security.md): inside the
 * command's private mount namespace every writable mount is remounted `noexec`, so nothing can be started from a
 * place the command can write. `commandIsolation: auto` uses it where it can be set up and says so where it cannot;
 * the doctor reports which applies. Both ask `strictIsolationSupport`, so they never disagree.
 */
import { execFile } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join, sep } from 'node:path';
import { namespaceSupport } from './namespaces.js';

/**
 * One line of `/proc/self/mountinfo`.
 * @example const rw = mounts().filter((m: Mount) => m.options.split(',').includes('rw'));
 */
export interface Mount {
  dev: string;
  root: string;
  point: string;
  /** Per-mount options (`rw,nosuid,relatime`). */
  options: string;
  type: string;
}

function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(Number.parseInt(o, 8)));
}

/**
 * The mounts of this process (`/proc/self/mountinfo`), in order; empty where there is no such file.
 * @example for (const m of mounts()) console.log(m.point, m.type);
 */
export function mounts(): Mount[] {
  try {
    return readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(' '))
      .map((f) => ({
        dev: f[2] ?? '',
        root: unescapeMount(f[3] ?? ''),
        point: unescapeMount(f[4] ?? ''),
        options: f[5] ?? '',
        type: f[f.indexOf('-') + 1] ?? '',
      }));
  } catch {
    return [];
  }
}

/**
 * Whether `path` is `dir` or inside it (plain string comparison of absolute paths).
 * @example under('/usr/bin/rm', '/usr') // true
 */
export function under(path: string, dir: string): boolean {
  return dir === '/' || path === dir || path.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}

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

/**
 * Writable mounts to remount `noexec`, with the options to keep (a user namespace may not drop locked ones).
 * @example for (const m of writableMounts()) argv.push('mount', '-o', m.options, m.point);
 */
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

/**
 * `true` when the kernel lets a pid namespace forbid executing memory file descriptors (Linux 6.3+).
 * @example if (isRoot && memfdNoexecKnown()) steps.push('echo 2 > /proc/sys/vm/memfd_noexec');
 */
export function memfdNoexecKnown(): boolean {
  try {
    return statSync('/proc/sys/vm/memfd_noexec').isFile();
  } catch {
    return false;
  }
}

/** The shell steps that make a mount namespace strict (what plugins/system/src/deny-jail.ts runs, in this order). */
function strictSteps(mount: string, realRoot: boolean, all: Mount[] = mounts()): string[] {
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const steps = writableMounts(all).map((m) => `${mount} -o ${m.options} ${q(m.point)}`);
  if (realRoot && memfdNoexecKnown()) steps.unshift('echo 2 > /proc/sys/vm/memfd_noexec');
  return steps;
}

/**
 * Whether strict isolation can be set up here, and if not, why.
 * @example
 * const s: StrictSupport = await strictIsolationSupport();
 * if (!s.available) log.warn(`strict isolation is not possible here: ${s.reason}`);
 */
export type StrictSupport = { available: true; userNamespace: boolean } | { available: false; reason: string };

const MOUNT_PATH = ['/usr/sbin', '/usr/bin', '/sbin', '/bin'];
const cache = new Map<string, Promise<StrictSupport>>();

/**
 * Tries it once per process (and `unshare`): a private mount and pid namespace in which every writable mount is
 * remounted `noexec` (and, as root, executing memory is forbidden). Never throws.
 * @example
 * const s = await strictIsolationSupport();
 * const mode = s.available ? 'strict' : 'the weaker jail';
 */
export function strictIsolationSupport(opts: { unshare?: string } = {}): Promise<StrictSupport> {
  const key = opts.unshare ?? '';
  let found = cache.get(key);
  if (!found) {
    found = probe(opts);
    cache.set(key, found);
  }
  return found;
}

async function probe(opts: { unshare?: string }): Promise<StrictSupport> {
  const ns = await namespaceSupport(['mount', 'pid'], opts);
  if (!ns.available) return { available: false, reason: ns.reason };
  const mount = MOUNT_PATH.map((d) => join(d, 'mount')).find((p) => {
    try {
      return statSync(p).isFile();
    } catch {
      return false;
    }
  });
  if (!mount) return { available: false, reason: `mount (util-linux) was not found in ${MOUNT_PATH.join(':')}` };
  const realRoot = !ns.userNamespace && process.getuid?.() === 0;
  const steps = strictSteps(mount, realRoot);
  if (steps.length === 0) return { available: true, userNamespace: ns.userNamespace };
  return new Promise((resolve) => {
    execFile(
      ns.prefix[0] as string,
      [...ns.prefix.slice(1), '/bin/sh', '-c', steps.join(' && ')],
      { timeout: 10_000, env: { PATH: MOUNT_PATH.join(':') } },
      (err, _out, stderr) => {
        if (!err) return resolve({ available: true, userNamespace: ns.userNamespace });
        const why = String(stderr).trim().split('\n').filter(Boolean).pop() ?? err.message;
        resolve({ available: false, reason: `the writable mounts cannot be made noexec in the command's namespace (${why})` });
      },
    );
  });
}
