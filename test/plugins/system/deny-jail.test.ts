/**
 * The deny list enforced by the operating system: the bypass table run for real through run_command
 * (autoExecuteCommands on), in normal and in sudo mode, plus what no argv parser can see (scripts, interpreters'
 * process APIs, copies and hard links, busybox, `exec`/`command`, unmounting the stub, /proc/<pid>/root).
 * Every case leaves its sentinel files in place; the controls show the same commands DO delete them without the
 * jail, and the jail holds for a user without privileges (`nobody`, through a user namespace).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { discoverBuiltins } from '../../../kernel/plugins/discover.js';
import { DENIED_EXIT, DENIED_TEXT, DenyJail } from '../../../plugins/system/src/deny-jail.js';
import type { Actor } from '../../../sdk/index.js';
import { namespaceSupport } from '../../../sdk/namespaces.js';
import { rm, tmp } from '../../helpers.js';
import { CASES, lists } from './bypass-cases.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const OPERATOR: Actor = { kind: 'operator', channel: 'cli' };
const SENTINELS = ['x', 'y', 'marker', 'sentinel'];
const ns = await namespaceSupport(['mount', 'pid']);
const JAIL = ns.available;
const IS_ROOT = process.getuid?.() === 0;
if (!JAIL) console.warn(`deny-jail.test: the operating-system cases are skipped: ${ns.reason}`);

function has(program: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' }).status === 0;
}
const MISSING = ['python3', 'perl', 'node'].filter((p) => !has(p));
if (MISSING.length) console.warn(`deny-jail.test: not installed, their cases are skipped: ${MISSING.join(', ')}`);
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
  console.warn('deny-jail.test: busybox is not installed (and could not be: not root, or no apt-get): the busybox case is skipped');

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

/** [what, argv, the stub's message is expected] — every one passes the argv check (the OS must stop it). */
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
        if (stub) {
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

/** A copy of rm that was not made through the stubbed path (as if downloaded or extracted from a package). */
const ELSEWHERE: Record<string, string> = {
  'run-copy.sh': './tools/x sentinel\n',
  'ld.sh': 'for l in /lib64/ld-linux*.so.* /lib/ld-linux*.so.* /lib/*/ld-linux*.so.*; do [ -e "$l" ] && "$l" ./tools/x sentinel; done\n',
  'memfd.py':
    "import os\nfd = os.memfd_create('x')\nos.write(fd, open('tools/x', 'rb').read())\nos.execv(f'/proc/self/fd/{fd}', ['x', 'sentinel'])\n",
};
const ELSEWHERE_CASES: Array<[string, string[], boolean]> = [
  ['started from a writable folder', ['bash', 'run-copy.sh'], true],
  ['started through the dynamic loader', ['bash', 'ld.sh'], true],
  // Only a privileged pid namespace owner may forbid executing memory (vm.memfd_noexec): real root.
  ['run from memory (memfd_create + execve)', ['python3', 'memfd.py'], IS_ROOT],
];

async function withCopy(mode: string): Promise<Started> {
  const s = await start({ commandIsolation: mode });
  mkdirSync(join(s.work, 'tools'));
  execFileSync('cp', [execFileSync('sh', ['-c', 'readlink -f "$(which rm)"'], { encoding: 'utf8' }).trim(), join(s.work, 'tools', 'x')]);
  for (const [name, text] of Object.entries(ELSEWHERE)) writeFileSync(join(s.work, name), text);
  return s;
}

describe.skipIf(!JAIL)('a copy of rm obtained another way (not through the stubbed path)', () => {
  it('auto: it runs (the documented gap of auto)', async () => {
    const s = await withCopy('auto');
    for (const [what, argv] of ELSEWHERE_CASES) {
      if (MISSING.includes(argv[0] as string)) continue;
      plant(s.work);
      const r = await s.kernel.execute('run_command', { command: argv[0], args: argv.slice(1) }, OPERATOR);
      expect(r.result, what).toContain('Isolation: on (');
      expect(existsSync(join(s.work, 'sentinel')), `${what}: ${r.result}`).toBe(false);
    }
  });

  it('strict: nothing runs from a writable place, while allowed commands still run', async () => {
    const s = await withCopy('strict');
    const echo = await s.kernel.execute('run_command', { command: 'echo', args: ['still works'] }, OPERATOR);
    expect(echo.result).toContain('still works');
    expect(echo.result).toContain('Isolation: on, strict');
    const node = await s.kernel.execute('run_command', { command: 'node', args: ['-e', 'console.log(6*7)'] }, OPERATOR);
    expect(node.result).toContain('42');
    for (const [what, argv, closed] of ELSEWHERE_CASES) {
      if (!closed || MISSING.includes(argv[0] as string)) continue;
      plant(s.work);
      const r = await s.kernel.execute('run_command', { command: argv[0], args: argv.slice(1) }, OPERATOR);
      expect(r.result, what).toContain('Isolation: on, strict');
      // Refused by the kernel (noexec, memfd_noexec), not because the interpreter itself could not start.
      expect(r.result, what).toMatch(/Permission denied|failed to map segment/);
      expectPlanted(s.work, `${what} (strict)`);
    }
    // The stubs still hold in strict mode.
    plant(s.work);
    const stub = await s.kernel.execute('run_command', { command: 'bash', args: ['del.sh'] }, OPERATOR);
    expect(stub.result).toContain(DENIED_TEXT);
    expectPlanted(s.work, 'del.sh (strict)');
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

  it.skipIf(!JAIL)('a deny list that names a program the jail needs gives no jail, and says why', async () => {
    const jail = await new DenyJail().prepare({ deny: ['rm', 'mount'], allow: [] }, 'auto', process.env);
    expect(jail).toEqual({ isolated: false, reason: '"mount" is on commandDenyList, and the jail needs mount to start' });
  });
});

describe.skipIf(!JAIL || !IS_ROOT || !SETPRIV)('a user without privileges (nobody, through a user namespace)', () => {
  it('the same cases fail for nobody, and the stubs cannot be unmounted', async () => {
    const dir = mkdtempSync('/tmp/keel-nobody-');
    cleanup.push(() => rm(dir));
    await build({
      entryPoints: [join(import.meta.dirname, 'fixtures', 'jail-runner.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node22',
      outfile: join(dir, 'runner.mjs'),
      logLevel: 'silent',
    });
    const work = join(dir, 'work');
    mkdirSync(work);
    for (const [name, text] of Object.entries(SCRIPTS)) writeFileSync(join(work, name), text);
    plant(work);
    for (const p of [dir, work, ...[...Object.keys(SCRIPTS), ...SENTINELS].map((n) => join(work, n))]) chownSync(p, 65534, 65534);
    chmodSync(dir, 0o755);
    const cases = [
      ['id', '-u'],
      ...OS_CASES.filter(([what, argv]) => (BUSYBOX || !what.startsWith('busybox')) && !MISSING.includes(argv[0] as string)).map(
        ([, argv]) => argv,
      ),
    ];
    const out = execFileSync(
      'setpriv',
      ['--reuid=65534', '--regid=65534', '--clear-groups', '--', process.execPath, join(dir, 'runner.mjs'), work, JSON.stringify(cases)],
      {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, TMPDIR: dir, LANG: 'C.UTF-8' },
        timeout: 120_000,
      },
    );
    const report = JSON.parse(out) as {
      uid: number;
      jail: { userNamespace?: boolean; reason?: string };
      out: Array<{ exitCode: number; stdout: string; stderr: string }>;
    };
    expect(report.uid).toBe(65534);
    expect(report.jail, JSON.stringify(report.jail)).toMatchObject({ userNamespace: true });
    expect(report.out[0]?.stdout.trim()).toBe('65534'); // the command runs as the user again, not as a mapped root
    expect(report.out.slice(1).some((o) => o.stderr.includes(DENIED_TEXT))).toBe(true);
    expectPlanted(work, 'nobody');
  });

  it('strict holds for nobody too: a copy kept in a writable folder cannot run', async () => {
    const dir = mkdtempSync('/tmp/keel-nobody-');
    cleanup.push(() => rm(dir));
    await build({
      entryPoints: [join(import.meta.dirname, 'fixtures', 'jail-runner.ts')],
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node22',
      outfile: join(dir, 'runner.mjs'),
      logLevel: 'silent',
    });
    const work = join(dir, 'work');
    mkdirSync(join(work, 'tools'), { recursive: true });
    execFileSync('cp', [execFileSync('sh', ['-c', 'readlink -f "$(which rm)"'], { encoding: 'utf8' }).trim(), join(work, 'tools', 'x')]);
    for (const [name, text] of Object.entries(ELSEWHERE)) writeFileSync(join(work, name), text);
    plant(work);
    execFileSync('chown', ['-R', '65534:65534', dir]);
    const run = (mode: string) =>
      JSON.parse(
        execFileSync(
          'setpriv',
          [
            '--reuid=65534',
            '--regid=65534',
            '--clear-groups',
            '--',
            process.execPath,
            join(dir, 'runner.mjs'),
            work,
            JSON.stringify([
              ['bash', 'run-copy.sh'],
              ['bash', 'ld.sh'],
            ]),
            mode,
          ],
          {
            encoding: 'utf8',
            env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, TMPDIR: dir, LANG: 'C.UTF-8' },
            timeout: 120_000,
          },
        ),
      ) as { jail: { strict?: boolean }; out: Array<{ stderr: string }> };
    const strict = run('strict');
    expect(strict.jail).toMatchObject({ strict: true });
    expect(strict.out.map((o) => o.stderr).join('\n')).toMatch(/Permission denied/);
    expectPlanted(work, 'nobody, strict');
    run('auto'); // the control: the same copy deletes the sentinel in auto
    expect(existsSync(join(work, 'sentinel'))).toBe(false);
  });
});
