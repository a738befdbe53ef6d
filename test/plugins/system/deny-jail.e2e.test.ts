/**
 * The deny list enforced by the operating system: the bypass table run for real through run_command
 * (autoExecuteCommands on), in normal and in sudo mode, plus what no argv parser can see (scripts, interpreters'
 * process APIs, copies and hard links, busybox, `exec`/`command`, unmounting the stub, /proc/<pid>/root), and a
 * denied program's bytes brought into a writable folder (downloaded, extracted, copied before), which the default
 * (strict wherever it can be set up) stops. Every case leaves its sentinel files in place; the controls show the
 * same commands DO delete them without the jail (or with the stubs alone), and the jail holds for a user without
 * privileges (`nobody`, through a user namespace), wherever the checkout lives.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { discoverBuiltins } from '../../../kernel/plugins/discover.js';
import { DENIED_EXIT, DENIED_TEXT, DenyJail } from '../../../plugins/system/src/deny-jail.js';
import { childEnv, runArgv } from '../../../plugins/system/src/exec.js';
import { CommandService } from '../../../plugins/system/src/service.js';
import { strictIsolationSupport } from '../../../sdk/command-isolation.js';
import type { Actor } from '../../../sdk/index.js';
import { namespaceSupport } from '../../../sdk/namespaces.js';
import { rm, tmp, waitFor } from '../../helpers.js';
import { CASES, lists, WRITABLE_COPY_CASES, WRITABLE_COPY_SCRIPTS } from './bypass-cases.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const OPERATOR: Actor = { kind: 'operator', channel: 'cli' };
const SENTINELS = ['x', 'y', 'marker', 'sentinel'];
const ns = await namespaceSupport(['mount', 'pid']);
const JAIL = ns.available;
const IS_ROOT = process.getuid?.() === 0;
if (!JAIL) console.warn(`deny-jail.e2e.test: the operating-system cases are skipped: ${ns.reason}`);
/** Whether the default (`auto`) is strict on this machine; where it is not, the tests check that it says why. */
const strictHere = await strictIsolationSupport();
const STRICT = strictHere.available;
if (JAIL && !strictHere.available) console.warn(`deny-jail.e2e.test: strict isolation is not possible here: ${strictHere.reason}`);

function has(program: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' }).status === 0;
}
const MISSING = ['python3', 'perl', 'node', 'curl', 'wget', 'dpkg-deb'].filter((p) => !has(p));
if (MISSING.length) console.warn(`deny-jail.e2e.test: not installed, their cases are skipped: ${MISSING.join(', ')}`);
const SETPRIV = has('setpriv');

function hasBusybox(): boolean {
  return spawnSync('busybox', ['--list'], { stdio: 'ignore' }).status === 0;
}
// As the README's CI does (.ci/run): root installs busybox when it is missing; otherwise the case says why it skips.
if (!hasBusybox() && IS_ROOT && spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status === 0) {
  spawnSync('apt-get', ['install', '-y', '-qq', 'busybox'], {
    stdio: 'ignore',
    timeout: 120_000,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}
const BUSYBOX = hasBusybox();
if (!BUSYBOX)
  console.warn('deny-jail.e2e.test: busybox is not installed (and could not be: not root, or no apt-get): the busybox case is skipped');

/** Script files that exist before the command runs (the command only names the interpreter and the file). */
const SCRIPTS: Record<string, string> = {
  'del.sh': 'rm sentinel\n',
  'del.py': "import subprocess, sys\nsys.exit(subprocess.run(['rm', 'sentinel']).returncode)\n",
  'del.js': "const r = require('node:child_process').spawnSync('rm', ['sentinel'], { stdio: 'inherit' });\nprocess.exit(r.status ?? 1);\n",
  'del.pl': "exit(system('rm', 'sentinel') >> 8);\n",
  'exec.sh': 'exec rm sentinel\n',
  'command.sh': 'command rm sentinel\n',
  'copy.sh': 'cp "$(command -v rm)" ./myrm && chmod +x ./myrm && ./myrm sentinel\n',
  'hardlink.sh': 'ln "$(command -v rm)" ./lrm; ./lrm sentinel; ln -P "$(readlink -f "$(command -v rm)")" ./lrm2; ./lrm2 sentinel\n',
  'symlink.sh': 'ln -s "$(command -v rm)" ./srm && ./srm sentinel\n',
  'busybox.sh': 'busybox rm sentinel\n',
  'umount.sh': 'umount "$(command -v rm)"; umount -l "$(command -v rm)"; rm sentinel\n',
  'proc.sh': 'for p in /proc/[0-9]*/root/usr/bin/rm; do "$p" sentinel; done\n',
  'userns.sh': "unshare -rm sh -c 'umount /usr/bin/rm; rm sentinel'\n",
};

/**
 * [what, argv, the stub's message is expected] — every one passes the argv check (the OS must stop it). Under
 * strict isolation the copy made inside the command cannot even start (noexec) instead of being a stub.
 */
const OS_CASES: Array<[string, string[], boolean]> = [
  ['a script written and run by the same command', ['bash', '-c', "echo 'rm sentinel' > made.sh; bash made.sh"], true],
  ['an existing script file', ['bash', 'del.sh'], true],
  ['python through subprocess (a script file)', ['python3', 'del.py'], true],
  ['node through child_process (a script file)', ['node', 'del.js'], true],
  ['perl through system() (a script file)', ['perl', 'del.pl'], true],
  ['the exec builtin (in a script)', ['bash', 'exec.sh'], true],
  ['the command builtin (in a script)', ['bash', 'command.sh'], true],
  ['a copy of the binary under another name, made inside the command', ['bash', 'copy.sh'], true],
  ['a hard link of the binary under another name, made inside the command', ['bash', 'hardlink.sh'], false],
  ['a symbolic link under another name', ['bash', 'symlink.sh'], true],
  ['busybox rm (in a script)', ['bash', 'busybox.sh'], true],
  ['unmounting the stub first', ['bash', 'umount.sh'], true],
  ["the host's files through /proc/<pid>/root", ['bash', 'proc.sh'], true],
  ['a new user namespace to unmount the stub in', ['bash', 'userns.sh'], true],
];

interface Started {
  kernel: Kernel;
  work: string;
}
const cleanup: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

async function start(overrides: Record<string, unknown>): Promise<Started> {
  const home = tmp('keel-jail-');
  const work = join(home, 'work');
  mkdirSync(work);
  const empty = tmp('keel-empty-');
  cleanup.push(
    () => rm(home),
    () => rm(empty),
  );
  const system = (await discoverBuiltins(join(ROOT, 'plugins'))).find((c) => c.dir === join(ROOT, 'plugins', 'system'));
  const kernel = await startKernel({
    home,
    env: {},
    watchSkills: false,
    logs: new LogSink({ quiet: true }),
    overrides: {
      commandWorkingDir: work,
      autoExecuteCommands: true,
      commandAllowList: lists.allow,
      commandTimeoutMs: 20_000,
      ...overrides,
    },
    builtinDir: empty,
    builtinOnly: true,
    extraPlugins: [system!],
  });
  cleanup.push(() => kernel.stop());
  for (const [name, text] of Object.entries(SCRIPTS)) writeFileSync(join(work, name), text);
  // A repository, so that `git clean` in the bypass table would really delete the untracked sentinels.
  if (has('git')) execFileSync('git', ['init', '-q', work]);
  return { kernel, work };
}

function plant(work: string): void {
  for (const s of SENTINELS) writeFileSync(join(work, s), 'still here');
}
function expectPlanted(work: string, what: string): void {
  for (const s of SENTINELS) expect(existsSync(join(work, s)), `${what}: sentinel "${s}" was deleted`).toBe(true);
}

/** The bypass table, minus what cannot run offline; programs not on the allow list get a name that exists nowhere. */
const REAL_CASES = CASES.filter(([, argv]) => argv[0] !== 'npx' || argv[1] !== 'prettier').map(
  ([what, argv, allowed]) => [what, argv.map((a) => a.replace(/\bvim\b/g, 'keel-no-such-tool')), allowed] as const,
);

for (const sudo of [false, true]) {
  describe(`run_command for real, ${sudo ? 'sudo mode' : 'normal mode'} (autoExecuteCommands on)`, () => {
    let s: Started;
    beforeAll(async () => {
      s = await start({ sudoMode: sudo });
    });

    it('allowed commands still run and return their output', async () => {
      const r = await s.kernel.execute('run_command', { command: 'echo', args: ['hello from the jail'] }, OPERATOR);
      expect(r.success, r.result).toBe(true);
      expect(r.result).toContain('hello from the jail');
      expect(r.result).toContain('Exit code: 0');
      expect(r.result).toContain(JAIL ? 'Isolation: on' : 'Isolation: none');
      // The default is strict wherever it can be set up; elsewhere the result says why not.
      if (JAIL) expect(r.result).toContain(STRICT ? 'Isolation: on, strict' : 'Strict isolation could not be set up here');
      const ls = await s.kernel.execute('run_command', { command: 'bash', args: ['-c', 'ls -1 | grep del.sh'] }, OPERATOR);
      expect(ls.result).toContain('del.sh');
    });

    it.skipIf(!sudo)('a program that does not exist is reported as not started, as without the jail', async () => {
      const r = await s.kernel.execute('run_command', { command: 'keel-no-such-tool', args: ['x'] }, OPERATOR);
      expect(r.result).toContain('Could not start: ENOENT: keel-no-such-tool was not found');
    });

    it(`runs the bypass table (${REAL_CASES.length} cases): each keeps its sentinels`, async () => {
      for (const [what, argv, allowed] of REAL_CASES) {
        plant(s.work);
        const r = await s.kernel.execute('run_command', { command: argv[0], args: argv.slice(1) }, OPERATOR);
        if (allowed) expect(r.result, `${what}: ${r.result}`).toContain('Exit code:');
        // Refused by the argv check, or (sudo mode: the allow list does not apply) run in the jail.
        else expect(r.result, what).toMatch(sudo ? /Command refused: |Isolation: / : /Command refused: /);
        expectPlanted(s.work, what);
      }
    });

    for (const [what, argv, stub] of OS_CASES) {
      const skip = !JAIL || (what.startsWith('busybox') && !BUSYBOX) || MISSING.includes(argv[0] as string);
      it.skipIf(skip)(`${what}: passes the argv check, and the operating system refuses rm`, async () => {
        plant(s.work);
        const r = await s.kernel.execute('run_command', { command: argv[0], args: argv.slice(1) }, OPERATOR);
        expect(r.success, r.result).toBe(true);
        expect(r.result).not.toMatch(/Command refused/);
        expect(r.result).toContain('Isolation: on');
        if (stub && STRICT && what.startsWith('a copy')) expect(r.result).toMatch(/Permission denied/);
        else if (stub) {
          expect(r.result).toContain(DENIED_TEXT);
          expect(r.result).toContain(`exits with ${DENIED_EXIT}`);
        }
        expectPlanted(s.work, what);
        for (const junk of ['myrm', 'lrm', 'lrm2', 'srm', 'made.sh']) rm(join(s.work, junk));
      });
    }
  });
}

describe('the controls: without the jail the same commands get through', () => {
  it('commandIsolation off: a script deletes its sentinel, and the result says there was no isolation', async () => {
    const s = await start({ commandIsolation: 'off' });
    plant(s.work);
    const r = await s.kernel.execute(
      'run_command',
      { command: 'bash', args: ['-c', "echo 'rm sentinel' > made.sh; bash made.sh"] },
      OPERATOR,
    );
    expect(r.success, r.result).toBe(true);
    expect(r.result).toContain('Isolation: none (commandIsolation is off)');
    expect(existsSync(join(s.work, 'sentinel'))).toBe(false);
    // The argv check still stands in front.
    const direct = await s.kernel.execute('run_command', { command: 'rm', args: ['x'] }, OPERATOR);
    expect(direct.result).toMatch(/Command refused: "rm" is on commandDenyList/);
    expect(existsSync(join(s.work, 'x'))).toBe(true);
  });

  it.skipIf(!JAIL)(
    'commandIsolation off: every case the jail stops deletes its sentinel (the argv check alone lets them through)',
    async () => {
      const s = await start({ commandIsolation: 'off' });
      for (const [what, argv] of OS_CASES) {
        if ((what.startsWith('busybox') && !BUSYBOX) || MISSING.includes(argv[0] as string)) continue;
        plant(s.work);
        const r = await s.kernel.execute('run_command', { command: argv[0], args: argv.slice(1) }, OPERATOR);
        expect(r.result, what).toContain('Isolation: none');
        expect(existsSync(join(s.work, 'sentinel')), `${what} without the jail: ${r.result}`).toBe(false);
        for (const junk of ['myrm', 'lrm', 'lrm2', 'srm', 'made.sh']) rm(join(s.work, junk));
      }
    },
  );

  it.skipIf(MISSING.includes('python3'))(
    'the documented limit: an allowed interpreter deleting a file through its own library is not a program start',
    async () => {
      const s = await start({});
      plant(s.work);
      writeFileSync(join(s.work, 'unlink.py'), "import os\nos.remove('sentinel')\n");
      const r = await s.kernel.execute('run_command', { command: 'python3', args: ['unlink.py'] }, OPERATOR);
      expect(r.result).toContain('Exit code: 0');
      expect(existsSync(join(s.work, 'sentinel'))).toBe(false);
    },
  );

  it('safe mode still blocks run_command outright', async () => {
    const s = await start({ safeMode: true });
    const r = await s.kernel.execute('run_command', { command: 'echo hi' }, OPERATOR);
    expect(r.success).toBe(false);
    expect(r.code).toBe('KEEL_E_SAFE_MODE');
  });
});

/** The host's rm and busybox (real paths, read outside any jail). */
const REAL_RM = execFileSync('sh', ['-c', 'readlink -f "$(command -v rm)"'], { encoding: 'utf8' }).trim();
const REAL_BUSYBOX = BUSYBOX ? execFileSync('sh', ['-c', 'readlink -f "$(command -v busybox)"'], { encoding: 'utf8' }).trim() : '';
const APT_CACHE = '/var/cache/apt/archives';
const DEB = (() => {
  try {
    const f = readdirSync(APT_CACHE).find((n) => /^busybox_.*\.deb$/.test(n));
    return f ? join(APT_CACHE, f) : undefined;
  } catch {
    return undefined;
  }
})();

/** Why a writable-copy case cannot run here (its `needs`), or undefined. `root` matters only where strict must stop it. */
function unmet(needs: string[], strict: boolean): string | undefined {
  for (const n of needs) {
    if (n === 'root') {
      if (strict && !IS_ROOT) return 'only real root may forbid executing memory (vm.memfd_noexec)';
    } else if (n === 'deb') {
      if (!DEB) return `no busybox .deb in ${APT_CACHE}`;
    } else if (n === 'busybox') {
      if (!BUSYBOX) return 'busybox is not installed';
    } else if (MISSING.includes(n)) return `${n} is not installed`;
  }
  return undefined;
}

/** The loopback server the download cases fetch from: /rm and /busybox, the host's files. */
let server: Server | undefined;
async function servePort(): Promise<number> {
  if (!server) {
    const files: Record<string, string> = { '/rm': REAL_RM, ...(BUSYBOX ? { '/busybox': REAL_BUSYBOX } : {}) };
    const srv = createServer((req, res) => {
      const file = files[req.url ?? ''];
      if (!file) {
        res.statusCode = 404;
        res.end();
        return;
      }
      res.end(readFileSync(file));
    });
    server = srv;
    await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
    cleanup.push(
      () =>
        new Promise<void>((resolve) => {
          srv.closeAllConnections();
          srv.close(() => resolve());
        }),
    );
  }
  return (server.address() as AddressInfo).port;
}

/** A kernel whose working folder holds the writable-copy scripts, a copy of rm (tools/x) and of busybox (tools/busybox). */
async function withCopies(mode?: string): Promise<Started> {
  const s = await start(mode ? { commandIsolation: mode } : {});
  mkdirSync(join(s.work, 'tools'));
  copyFileSync(REAL_RM, join(s.work, 'tools', 'x'));
  chmodSync(join(s.work, 'tools', 'x'), 0o755);
  if (BUSYBOX) {
    copyFileSync(REAL_BUSYBOX, join(s.work, 'tools', 'busybox'));
    chmodSync(join(s.work, 'tools', 'busybox'), 0o755);
  }
  const port = String(await servePort());
  for (const [name, text] of Object.entries(WRITABLE_COPY_SCRIPTS)) {
    writeFileSync(join(s.work, name), text.replaceAll('{PORT}', port).replaceAll('{DEB}', DEB ?? ''));
  }
  return s;
}

function dropDownloads(work: string): void {
  for (const junk of ['dl-rm', 'dl-bb', 'dl-node', 'pkg']) rm(join(work, junk));
}

describe.skipIf(!JAIL)("a denied program's bytes in a writable folder (copied before, downloaded, extracted)", () => {
  // One kernel for the three modes (the operator switches commandIsolation between them).
  let s: Started;
  beforeAll(async () => {
    s = await withCopies();
  });
  const runCase = (argv: string[]) => s.kernel.execute('run_command', { command: argv[0], args: argv.slice(1) }, OPERATOR);

  it('the default (auto) is strict here: none of them can start, and it is said at start', async () => {
    if (!STRICT) {
      // Where strict cannot be set up, the default says so in every result (and once at start).
      const r = await runCase(['bash', 'run-copy.sh']);
      expect(r.result).toContain(`Strict isolation could not be set up here (${strictHere.available ? '' : strictHere.reason})`);
      return;
    }
    const skipped: string[] = [];
    for (const [what, argv, needs] of WRITABLE_COPY_CASES) {
      const why = unmet(needs, true);
      if (why) {
        skipped.push(`${what}: ${why}`);
        continue;
      }
      plant(s.work);
      const r = await runCase(argv);
      expect(r.result, what).not.toMatch(/Command refused/);
      expect(r.result, what).toContain('Isolation: on, strict');
      // Refused by the kernel (noexec, memfd_noexec), not because the interpreter itself could not start.
      expect(r.result, what).toMatch(/Permission denied|failed to map segment|EACCES/);
      expectPlanted(s.work, `${what} (default)`);
      dropDownloads(s.work);
    }
    if (skipped.length) console.warn(`deny-jail.e2e.test: writable-copy cases skipped: ${skipped.join('; ')}`);
    await waitFor(
      () => s.kernel.logs.recent({}).some((e) => /commands: isolation strict \(commandIsolation auto\)/.test(e.message)),
      'the start line about the isolation',
    );
  });

  it.skipIf(!STRICT)('strict, set explicitly, holds the same', async () => {
    await s.kernel.config.set('commandIsolation', 'strict', { kind: 'operator' });
    plant(s.work);
    const r = await runCase(['bash', 'curl.sh']);
    expect(r.result).toContain('Isolation: on, strict');
    expect(r.result).toMatch(/Permission denied/);
    expectPlanted(s.work, 'curl.sh (strict)');
    dropDownloads(s.work);
  });

  it('the control: with the stubs alone (commandIsolation required) each of them deletes its sentinel', async () => {
    await s.kernel.config.set('commandIsolation', 'required', { kind: 'operator' });
    for (const [what, argv, needs] of WRITABLE_COPY_CASES) {
      if (unmet(needs, false)) continue;
      plant(s.work);
      const r = await runCase(argv);
      expect(r.result, what).toContain('Isolation: on (');
      expect(existsSync(join(s.work, 'sentinel')), `${what} with the stubs alone: ${r.result}`).toBe(false);
      dropDownloads(s.work);
    }
  });
});

describe('where the system refuses namespaces', () => {
  it('a failing unshare makes the jail unavailable, with the reason', async () => {
    const dir = tmp('keel-fake-unshare-');
    cleanup.push(() => rm(dir));
    const fake = join(dir, 'unshare');
    writeFileSync(fake, '#!/bin/sh\necho "unshare: unshare failed: Operation not permitted" >&2\nexit 1\n');
    chmodSync(fake, 0o755);
    const probe = await namespaceSupport(['mount', 'pid'], { unshare: fake });
    expect(probe).toMatchObject({ available: false });
    expect(!probe.available && probe.reason).toContain('Operation not permitted');
    const jail = await new DenyJail().prepare({ deny: ['rm'], allow: [] }, 'auto', process.env, { unshare: fake });
    expect(jail.isolated).toBe(false);
    expect(!jail.isolated && jail.reason).toContain('Operation not permitted');
  });

  it.skipIf(!JAIL)('where only the stubs can be set up, auto uses them and says so: in the result and once at start', async () => {
    // A system whose namespaces work but whose mounts cannot be made noexec: the real unshare, except for that.
    const dir = tmp('keel-no-noexec-');
    cleanup.push(() => rm(dir));
    const real = execFileSync('sh', ['-c', 'command -v unshare'], { encoding: 'utf8' }).trim();
    const fake = join(dir, 'unshare');
    writeFileSync(
      fake,
      `#!/bin/sh\nfor a in "$@"; do case "$a" in *noexec*) echo "mount: /: permission denied." >&2; exit 32;; esac; done\nexec ${real} "$@"\n`,
    );
    chmodSync(fake, 0o755);
    const deny = new DenyJail();
    cleanup.push(() => deny.close());
    const jail = await deny.prepare({ deny: ['rm'], allow: [] }, 'auto', childEnv(), { unshare: fake });
    expect(jail).toMatchObject({ isolated: true, strict: false });
    expect(jail.isolated && jail.notStrict).toContain('permission denied');
    // The stubs still apply; a copy in a writable folder runs (the gap this mode says it has).
    const work = join(dir, 'work');
    mkdirSync(join(work, 'tools'), { recursive: true });
    copyFileSync(REAL_RM, join(work, 'tools', 'x'));
    writeFileSync(join(work, 'a'), '');
    writeFileSync(join(work, 'b'), '');
    const run = (argv: string[]) =>
      runArgv(jail.isolated ? jail.wrap(argv) : argv, { cwd: work, timeoutMs: 20_000, retries: 0, maxBytes: 65_536, env: childEnv() });
    expect((await run(['sh', '-c', 'rm a'])).stderr).toContain(DENIED_TEXT);
    expect(existsSync(join(work, 'a'))).toBe(true);
    await run(['sh', '-c', './tools/x b']);
    expect(existsSync(join(work, 'b'))).toBe(false);
    // What run_command's service says at start, with the same system.
    const warnings: string[] = [];
    const values: Record<string, unknown> = { commandIsolation: 'auto', commandDenyList: ['rm'], commandAllowList: [] };
    const home = join(dir, 'home');
    mkdirSync(home);
    const svc = new CommandService(
      {
        config: { get: (k: string) => values[k] },
        log: { warn: (m: string) => warnings.push(m), info: () => {}, error: () => {}, debug: () => {} },
        home,
        signal: new AbortController().signal,
        use: () => undefined,
      } as unknown as ConstructorParameters<typeof CommandService>[0],
      { unshare: fake },
    );
    await svc.reportIsolation();
    svc.close();
    expect(warnings.join('\n')).toMatch(
      /strict isolation cannot be set up here \(.*permission denied.*\), so commandIsolation auto uses the weaker jail/,
    );
  });

  it.skipIf(!JAIL)('a deny list that names a program the jail needs gives no jail, and says why', async () => {
    const jail = await new DenyJail().prepare({ deny: ['rm', 'mount'], allow: [] }, 'auto', process.env);
    expect(jail).toEqual({ isolated: false, reason: '"mount" is on commandDenyList, and the jail needs mount to start' });
  });
});

const AS_NOBODY = ['--reuid=65534', '--regid=65534', '--clear-groups'];

/**
 * A node binary `nobody` can start wherever the checkout lives (issue 36): a checkout under a folder only root may
 * enter (/root/keel, a `mktemp -d`) holds one nobody cannot. So node is hard-linked (same file system) or copied
 * into a folder of its own, mode 755 all the way, and nobody's PATH names that folder and the system folders only.
 * When nobody cannot start even that, the nobody tests are skipped with the reason.
 */
function nodeForNobody(): { node: string; path: string } | { reason: string } {
  if (!JAIL) return { reason: ns.available ? '' : ns.reason };
  if (!IS_ROOT) return { reason: 'the tests become nobody with setpriv, which needs root' };
  if (!SETPRIV) return { reason: 'setpriv (util-linux) is not installed' };
  const dir = mkdtempSync('/tmp/keel-node-');
  cleanup.push(() => rm(dir));
  chmodSync(dir, 0o755);
  const node = join(dir, 'node');
  try {
    if ((statSync(process.execPath).mode & 0o005) !== 0o005) throw new Error('not executable by others');
    linkSync(process.execPath, node);
  } catch {
    copyFileSync(process.execPath, node);
    chmodSync(node, 0o755);
  }
  const probe = spawnSync('setpriv', [...AS_NOBODY, '--', node, '-e', '0'], { encoding: 'utf8', timeout: 30_000 });
  if (probe.status !== 0) return { reason: `nobody cannot start node even from ${dir}: ${(probe.stderr || String(probe.error)).trim()}` };
  return { node, path: [dir, '/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'].join(':') };
}
const NOBODY = nodeForNobody();
if (JAIL && IS_ROOT && 'reason' in NOBODY) console.warn(`deny-jail.e2e.test: the nobody cases are skipped: ${NOBODY.reason}`);

/** Bundles the runner into a fresh folder nobody can read; runs it as nobody with node from that folder. */
async function nobodyRunner(): Promise<{ dir: string; run: (work: string, cases: string[][], mode?: string) => NobodyReport }> {
  const dir = mkdtempSync('/tmp/keel-nobody-');
  cleanup.push(() => rm(dir));
  chmodSync(dir, 0o755);
  await build({
    entryPoints: [join(import.meta.dirname, 'fixtures', 'jail-runner.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node22',
    outfile: join(dir, 'runner.mjs'),
    logLevel: 'silent',
  });
  chownSync(dir, 65534, 65534); // nobody's TMPDIR (the jail's stubs go there); the node binary lives elsewhere
  const { node, path } = NOBODY as { node: string; path: string };
  const run = (work: string, cases: string[][], mode = 'auto') =>
    JSON.parse(
      execFileSync('setpriv', [...AS_NOBODY, '--', node, join(dir, 'runner.mjs'), work, JSON.stringify(cases), mode], {
        encoding: 'utf8',
        env: { PATH: path, HOME: dir, TMPDIR: dir, LANG: 'C.UTF-8' },
        timeout: 120_000,
      }),
    ) as NobodyReport;
  return { dir, run };
}
interface NobodyReport {
  uid: number;
  jail: { userNamespace?: boolean; strict?: boolean; notStrict?: string; reason?: string };
  out: Array<{ exitCode: number | null; stdout: string; stderr: string }>;
}

describe.skipIf('reason' in NOBODY)('a user without privileges (nobody, through a user namespace)', () => {
  it('the same cases fail for nobody, and the stubs cannot be unmounted', async () => {
    const { dir, run } = await nobodyRunner();
    const work = join(dir, 'work');
    mkdirSync(work);
    for (const [name, text] of Object.entries(SCRIPTS)) writeFileSync(join(work, name), text);
    plant(work);
    for (const p of [work, ...[...Object.keys(SCRIPTS), ...SENTINELS].map((n) => join(work, n))]) chownSync(p, 65534, 65534);
    const cases = [
      ['id', '-u'],
      ...OS_CASES.filter(([what, argv]) => (BUSYBOX || !what.startsWith('busybox')) && !MISSING.includes(argv[0] as string)).map(
        ([, argv]) => argv,
      ),
    ];
    const report = run(work, cases);
    expect(report.uid).toBe(65534);
    expect(report.jail, JSON.stringify(report.jail)).toMatchObject({ userNamespace: true });
    expect(report.out[0]?.stdout.trim()).toBe('65534'); // the command runs as the user again, not as a mapped root
    expect(report.out.slice(1).some((o) => o.stderr.includes(DENIED_TEXT))).toBe(true);
    expectPlanted(work, 'nobody');
  });

  it('the default holds for nobody too: strict where it can be set up, so a copy kept in a writable folder cannot run', async () => {
    const { dir, run } = await nobodyRunner();
    const work = join(dir, 'work');
    mkdirSync(join(work, 'tools'), { recursive: true });
    copyFileSync(REAL_RM, join(work, 'tools', 'x'));
    chmodSync(join(work, 'tools', 'x'), 0o755);
    for (const name of ['run-copy.sh', 'ld.sh']) writeFileSync(join(work, name), WRITABLE_COPY_SCRIPTS[name] as string);
    plant(work);
    execFileSync('chown', ['-R', '65534:65534', work]);
    const cases = [
      ['bash', 'run-copy.sh'],
      ['bash', 'ld.sh'],
    ];
    const auto = run(work, cases);
    if (!auto.jail.strict) {
      // Not possible for nobody here: the default says why instead.
      expect(auto.jail.notStrict, JSON.stringify(auto.jail)).toBeTruthy();
      return;
    }
    expect(auto.out.map((o) => o.stderr).join('\n')).toMatch(/Permission denied/);
    expectPlanted(work, 'nobody, default');
    run(work, cases, 'required'); // the control: the same copy deletes the sentinel with the stubs alone
    expect(existsSync(join(work, 'sentinel'))).toBe(false);
  });
});
