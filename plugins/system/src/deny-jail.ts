/**
 * The deny list, enforced by the operating system (Linux): every command run_command starts runs in its own mount
 * and pid namespace in which each path that would start a program on commandDenyList (jail-scan.ts) has a stub
 * bound over it, read-only. The stub prints that the program was refused by the deny list and exits with
 * DENIED_EXIT. Scripts, interpreters' process APIs, `exec`, `command`, `busybox`, and a copy or hard link made
 * inside the command (a copy of a stub is a stub; a hard link across the bind mount fails) all end there.
 *
 * The chain, one process after the other (each execs the next, so the group and the timeout still hold):
 *   unshare [--user --map-root-user] --mount --propagation private --pid --fork --mount-proc --kill-child
 *   -> sh -c 'mount -a -T <fstab> (the stubs) || exit 70'
 *   -> root:     setpriv --bounding-set -sys_admin,-sys_module,-sys_boot   (no more mounting or unmounting)
 *      non-root: unshare --user --map-user=<uid> --map-group=<gid>           (the user again, no capabilities)
 *   -> the command.
 * Mounts made before a new user namespace are locked for it, and neither branch keeps CAP_SYS_ADMIN over the
 * jail's mount namespace: the command cannot unmount a stub. A fresh /proc in the pid namespace keeps
 * /proc/<host pid>/root (the host's view of the files) out of reach. Limits: docs/security.md.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { strictIsolationSupport } from '../../../sdk/command-isolation.js';
import { namespaceSupport } from '../../../sdk/index.js';
import { deniedBy, programName } from './command-policy.js';
import { type JailTarget, scanDenied, searchDirs } from './jail-scan.js';
import { execDirs, memfdNoexecKnown, writableMounts } from './jail-strict.js';

/** Exit code of a stub: sysexits EX_NOPERM. */
export const DENIED_EXIT = 77;
/** Exit code when the jail could not be set up (the command did not run). */
export const SETUP_EXIT = 70;
export const DENIED_TEXT = 'is refused by the deny list (commandDenyList)';
export const SETUP_TEXT = 'keel: the deny-list jail could not be set up; the command did not run';

/**
 * `auto` (the default): the strongest jail this system can set up: strict where it can (nothing runs from a
 * writable place, jail-strict.ts), else the stubs alone (`notStrict` says why), else none (the reason says why);
 * `required`: the stubs alone (programs in writable places run: build tools), and no command without them;
 * `strict`: strict, and no command without it; `off`: never (diagnosis).
 */
export type IsolationMode = 'auto' | 'required' | 'strict' | 'off';

export type Jail =
  | {
      isolated: true;
      wrap(argv: string[]): string[];
      targets: JailTarget[];
      notes: string[];
      userNamespace: boolean;
      strict: boolean;
      /** `auto` only: why strict isolation could not be set up here, so the stubs alone apply. */
      notStrict?: string;
    }
  | { isolated: false; reason: string };

const HELPERS = ['sh', 'mount', 'setpriv', 'unshare'] as const;
const HELPER_PATH = ['/usr/sbin', '/usr/bin', '/sbin', '/bin'];

function findHelper(name: string): string | undefined {
  for (const d of HELPER_PATH) {
    try {
      const p = join(d, name);
      if (statSync(p).isFile()) return p;
    } catch {
      /* next */
    }
  }
  return undefined;
}

function stubText(program: string): string {
  const shown = program.replace(/["\\$`]/g, '');
  return `#!/bin/sh\necho "keel: \\"${shown}\\" ${DENIED_TEXT}: run_command's commands cannot start it (started as \\"$0\\")." >&2\nexit ${DENIED_EXIT}\n`;
}

function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

function fstabPath(p: string): string {
  return p.replace(/[\\ \t\n]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`);
}

interface Built {
  key: string;
  stamp: string;
  dir: string;
  files: Map<string, string>;
  targets: JailTarget[];
  notes: string[];
}

export class DenyJail {
  private built: Built | undefined;

  /**
   * The jail for these lists, or why there is none. `mode` and `unshare` (a path, for tests that simulate a
   * system that refuses namespaces) come from the configuration and the caller.
   */
  async prepare(
    lists: { deny: readonly string[]; allow: readonly string[] },
    mode: IsolationMode,
    env: NodeJS.ProcessEnv,
    opts: { unshare?: string } = {},
  ): Promise<Jail> {
    if (mode === 'off') return { isolated: false, reason: 'commandIsolation is off' };
    const ns = await namespaceSupport(['mount', 'pid'], opts.unshare ? { unshare: opts.unshare } : {});
    if (!ns.available) return { isolated: false, reason: ns.reason };
    const deny = new Set(lists.deny.map(programName).filter(Boolean));
    const helpers: Record<string, string> = {};
    for (const h of HELPERS) {
      const p = h === 'unshare' && opts.unshare ? opts.unshare : findHelper(h);
      if (!p) return { isolated: false, reason: `${h} (util-linux) was not found in ${HELPER_PATH.join(':')}` };
      const denied = deniedBy(programName(h), deny);
      if (denied !== undefined) return { isolated: false, reason: `"${denied}" is on commandDenyList, and the jail needs ${h} to start` };
      helpers[h] = p;
    }
    const realRoot = !ns.userNamespace && process.getuid?.() === 0;
    let strict = mode === 'strict';
    let notStrict: string | undefined;
    if (mode === 'auto') {
      const s = await strictIsolationSupport(opts.unshare ? { unshare: opts.unshare } : {});
      strict = s.available;
      if (!s.available) notStrict = s.reason;
    }
    const b = this.build(lists, env, realRoot, strict);
    const uid = process.getuid?.() ?? 0;
    const gid = process.getgid?.() ?? 0;
    const drop = ns.userNamespace
      ? `exec ${helpers.unshare} --user --map-user=${uid} --map-group=${gid} -- "$@"`
      : `exec ${helpers.setpriv} --bounding-set=-sys_admin,-sys_module,-sys_boot -- "$@"`;
    const fail = `{ echo "${SETUP_TEXT}" >&2; exit ${SETUP_EXIT}; }`;
    const steps = [`${helpers.mount} -a -T "$1"`];
    if (strict) {
      if (realRoot && memfdNoexecKnown()) steps.unshift('echo 2 > /proc/sys/vm/memfd_noexec');
      for (const m of writableMounts()) steps.push(`${helpers.mount} -o ${m.options} ${shQuote(m.point)}`);
    }
    const script = `${steps.join(' && ')} || ${fail}; shift; ${drop}`;
    const fstab = join(b.dir, 'fstab');
    return {
      isolated: true,
      userNamespace: ns.userNamespace,
      strict,
      ...(notStrict !== undefined ? { notStrict } : {}),
      targets: b.targets,
      notes: b.notes,
      wrap: (argv) => {
        this.verify(b);
        return [...ns.prefix, helpers.sh as string, '-c', script, 'keel-deny-jail', fstab, ...argv];
      },
    };
  }

  /** Scan, write the stubs and the fstab; again only when the lists, PATH or a searched folder changed. */
  private build(
    lists: { deny: readonly string[]; allow: readonly string[] },
    env: NodeJS.ProcessEnv,
    realRoot: boolean,
    strict: boolean,
  ): Built {
    const dirs = searchDirs(env.PATH);
    const key = JSON.stringify([lists.deny, lists.allow, dirs, realRoot, strict]);
    const stamp = dirs.map((d) => statSync(d, { throwIfNoEntry: false })?.mtimeMs ?? 0).join(',');
    if (this.built && this.built.key === key && this.built.stamp === stamp) return this.built;
    const scan = scanDenied(lists.deny, lists.allow, dirs);
    const dir = this.built?.dir ?? mkdtempSync(join(tmpdir(), 'keel-deny-'));
    chmodSync(dir, 0o755);
    const files = new Map<string, string>();
    // Strict: the folders programs come from, read-only, first (a later bind over /usr would hide the stubs).
    const lines: string[] = strict ? execDirs(dirs).map((d) => `${fstabPath(d)} ${fstabPath(d)} none bind,ro 0 0`) : [];
    const stubOf = new Map<string, string>();
    for (const t of scan.targets) {
      let stub = stubOf.get(t.program);
      if (!stub) {
        stub = join(dir, `stub-${stubOf.size}`);
        stubOf.set(t.program, stub);
        files.set(stub, stubText(t.program));
      }
      lines.push(`${fstabPath(stub)} ${fstabPath(t.path)} none bind,ro 0 0`);
    }
    if (realRoot) {
      // Root could otherwise have the kernel start a program outside the jail (modprobe, core_pattern, uevent helper).
      lines.push('/proc/sys /proc/sys none bind,ro 0 0', '/sys/kernel /sys/kernel none bind,ro 0 0');
    }
    // The stubs themselves, read-only for the command.
    lines.push(`${fstabPath(dir)} ${fstabPath(dir)} none bind,ro 0 0`);
    files.set(join(dir, 'fstab'), `${lines.join('\n')}\n`);
    this.built = { key, stamp, dir, files, targets: scan.targets, notes: scan.notes };
    this.verify(this.built);
    return this.built;
  }

  /** Removes the stubs (the plugin stops). A jail prepared before keeps working until its commands end. */
  close(): void {
    if (this.built) rmSync(this.built.dir, { recursive: true, force: true });
    this.built = undefined;
  }

  /** The stubs and the fstab are what Keel wrote (something outside a jail could have changed them). */
  private verify(b: Built): void {
    for (const [path, text] of b.files) {
      let now: string | undefined;
      try {
        now = readFileSync(path, 'utf8');
      } catch {
        now = undefined;
      }
      if (now !== text) {
        if (now !== undefined) chmodSync(path, 0o644);
        writeFileSync(path, text, { mode: 0o644 });
        chmodSync(path, path.endsWith('fstab') ? 0o444 : 0o555);
      }
    }
  }
}
