/**
 * Linux namespaces through util-linux `unshare`: whether this machine lets Keel start a program in its own
 * network or mount (and pid) namespace, and the command prefix that does it. Tried once per process and set of
 * namespaces, first as is (root, or CAP_SYS_ADMIN), then inside a new user namespace (an unprivileged user where
 * user namespaces are enabled). The coder sandbox (network) and run_command's deny list (mount, pid) use it;
 * the doctor reports it.
 */
import { execFile } from 'node:child_process';

/**
 * A namespace Keel asks for: `net` (empty network), `mount` (private mounts), `pid` (own pids and a fresh /proc).
 * @example const kinds: NamespaceKind[] = ['mount', 'pid'];
 */
export type NamespaceKind = 'net' | 'mount' | 'pid';

/**
 * What `namespaceSupport` found: the prefix to use, or the reason there is none.
 * @example
 * const ns: NamespaceSupport = await namespaceSupport(['net']);
 * if (!ns.available) log.warn(`no network namespace: ${ns.reason}`);
 */
export type NamespaceSupport =
  | {
      available: true;
      /** `unshare ... --`: put it in front of an argv. */
      prefix: string[];
      /** True when a user namespace was needed (Keel is not root): inside, the program runs as a mapped root. */
      userNamespace: boolean;
    }
  | { available: false; reason: string };

const cache = new Map<string, Promise<NamespaceSupport>>();

function flagsOf(kinds: readonly NamespaceKind[]): string[] {
  const flags: string[] = [];
  if (kinds.includes('net')) flags.push('--net');
  if (kinds.includes('mount') || kinds.includes('pid')) flags.push('--mount', '--propagation', 'private');
  // A pid namespace is only worth having with its own /proc: the old one would still show every host process.
  if (kinds.includes('pid')) flags.push('--pid', '--fork', '--mount-proc', '--kill-child');
  return flags;
}

/**
 * Whether the namespaces can be made here, and how. Never throws; the reason says why not (another platform,
 * no `unshare`, or what `unshare` answered, e.g. "Operation not permitted" in a container without privilege).
 *
 * @example
 * const ns = await namespaceSupport(['net']);
 * const argv = ns.available ? [...ns.prefix, process.execPath, 'job.js'] : [process.execPath, 'job.js'];
 */
export function namespaceSupport(kinds: readonly NamespaceKind[], opts: { unshare?: string } = {}): Promise<NamespaceSupport> {
  const unshare = opts.unshare ?? 'unshare';
  const key = `${unshare}\0${[...kinds].sort().join(',')}`;
  let found = cache.get(key);
  if (!found) {
    found = probe(unshare, flagsOf(kinds));
    cache.set(key, found);
  }
  return found;
}

async function probe(unshare: string, flags: string[]): Promise<NamespaceSupport> {
  if (process.platform !== 'linux') return { available: false, reason: `namespaces are a Linux feature and this is ${process.platform}` };
  const attempt = (args: string[]) =>
    new Promise<string | undefined>((resolve) => {
      execFile(
        unshare,
        [...args, '--', process.execPath, '-e', '0'],
        { timeout: 5000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } },
        (err, _out, stderr) => {
          if (!err) return resolve(undefined);
          const code = (err as NodeJS.ErrnoException).code;
          resolve(
            code === 'ENOENT' ? `${unshare} (util-linux) is not installed` : (String(stderr).trim().split('\n').pop() ?? '') || err.message,
          );
        },
      );
    });
  const plain = await attempt(flags);
  if (plain === undefined) return { available: true, prefix: [unshare, ...flags, '--'], userNamespace: false };
  if (/not installed/.test(plain)) return { available: false, reason: plain };
  const userFlags = ['--user', '--map-root-user', ...flags];
  const user = await attempt(userFlags);
  if (user === undefined) return { available: true, prefix: [unshare, ...userFlags, '--'], userNamespace: true };
  return { available: false, reason: `unshare ${flags.join(' ')} failed (${plain}), and so did it in a user namespace (${user})` };
}
