/**
 * Before the suite: the Debian packages the tests drive as real parts, then dist/ (built once, so CLI tests run the
 * same compiled `keel` a user runs), then the servers the run shares (one redis-server; one dovecot with its test
 * CA, where each file gets a user and Maildir of its own).
 * One headless Chromium is shared too (test/chromium-server.ts, `keelChromiumCdp`): each browser file opens its own
 * context in it.
 *
 * The packages are installed here, before any test file is collected, because suites decide at import time whether
 * their server or browser is there (Chromium above all: about 130 browser and dashboard tests). As root with
 * apt-get, whatever is missing is installed from Debian's packages (Keel never downloads a browser or a binary
 * itself), so `npm install && npm test` on a fresh machine runs every test. Where that cannot be done (not root, no
 * apt, no package mirror), it says which suites will skip and why, and the suite goes on.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startSharedChromium } from './chromium-server.js';
import { startSharedDovecot } from './plugins/email/servers.js';
import { startSharedRedis } from './redis-server.js';

/** The program each package provides, and the package. Same list as .ci/run. */
export const TEST_PACKAGES: ReadonlyArray<{ program: string; pkg: string; service?: string; for: string }> = [
  { program: 'chromium', pkg: 'chromium', for: 'the browser plugin and the dashboard' },
  { program: 'tmux', pkg: 'tmux', for: '`keel ui`' },
  { program: 'dovecot', pkg: 'dovecot-imapd', service: 'dovecot', for: 'the email channel' },
  { program: 'busybox', pkg: 'busybox', for: 'the command deny-list tests' },
  { program: 'openssl', pkg: 'openssl', for: "the fake WhatsApp media server's certificate" },
  { program: 'redis-server', pkg: 'redis-server', service: 'redis-server', for: 'the shared queue' },
];

function have(program: string): boolean {
  if (['/usr/bin', '/usr/sbin', '/bin', '/sbin', '/usr/local/bin'].some((d) => existsSync(join(d, program)))) return true;
  return spawnSync('sh', ['-c', `command -v ${program}`], { stdio: 'ignore' }).status === 0;
}

export interface SetupDeps {
  have(program: string): boolean;
  run(cmd: string, args: string[]): { status: number | null; stderr?: unknown };
  isRoot: boolean;
  log(line: string): void;
}

const realDeps: SetupDeps = {
  have,
  run: (cmd, args) => spawnSync(cmd, args, { stdio: 'pipe', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, timeout: 900_000 }),
  isRoot: process.getuid?.() === 0,
  log: (l) => console.log(l),
};

/** Installs the missing packages where it can; returns the packages still missing (each said with the reason). */
export function installTestPackages(deps: SetupDeps = realDeps): string[] {
  const { run, log } = deps;
  const missing = TEST_PACKAGES.filter((p) => !deps.have(p.program));
  if (missing.length === 0) return [];
  const names = missing.map((p) => p.pkg);
  const root = deps.isRoot;
  const apt = deps.have('apt-get');
  if (root && apt) {
    log(`test set-up: installing Debian packages the tests need: ${names.join(' ')} (apt-get, once)`);
    let r = run('apt-get', ['install', '-y', '-qq', ...names]);
    if (r.status !== 0) {
      run('apt-get', ['update', '-qq']);
      r = run('apt-get', ['install', '-y', '-qq', ...names]);
    }
    // The tests start private instances; the system-wide services the packages start are not needed.
    for (const p of missing) {
      if (!p.service) continue;
      run('sh', [
        '-c',
        `(command -v systemctl >/dev/null && systemctl stop ${p.service}; command -v service >/dev/null && service ${p.service} stop) || true`,
      ]);
    }
    if (r.status !== 0)
      log(
        `test set-up: apt-get install exited ${r.status}: ${
          String(r.stderr ?? '')
            .trim()
            .split('\n')
            .pop() ?? ''
        }`,
      );
  }
  const still = TEST_PACKAGES.filter((p) => !deps.have(p.program));
  const why = !root
    ? 'this user is not root: run `apt-get install -y <package>` as root'
    : !apt
      ? 'there is no apt-get here'
      : 'apt-get could not install it';
  for (const p of still) log(`test set-up: ${p.pkg} is missing (${why}); the tests of ${p.for} will be skipped.`);
  return still.map((p) => p.pkg);
}

/**
 * Servers shared by the whole run, started once here rather than once per file: the redis-server of
 * `sharedRedis()` (test/redis-server.ts), its URL provided as `keelRedisUrl`; the dovecot and test CA of
 * `fileDovecot()` and `testCa()` (test/plugins/email/servers.ts), provided as `keelDovecot`. (Not for the unit
 * tier: its only global set-up is the run's temporary folder, test/tmp-setup.ts.)
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  installTestPackages();
  const root = join(import.meta.dirname, '..');
  if (existsSync(join(root, 'scripts', 'build.mjs'))) {
    execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' });
  }
  const redis = await startSharedRedis().catch((e: unknown) => {
    console.log(`test set-up: the shared redis-server did not start (${String(e)}); each Redis file starts its own.`);
    return undefined;
  });
  project.provide('keelRedisUrl', redis?.url);
  const dovecot = await startSharedDovecot().catch((e: unknown) => {
    console.log(`test set-up: the shared dovecot did not start (${String(e)}); each email file starts its own.`);
    return undefined;
  });
  project.provide(
    'keelDovecot',
    dovecot && {
      host: dovecot.host,
      port: dovecot.port,
      dir: dovecot.dir,
      caDir: dovecot.caDir,
      caFile: dovecot.caFile,
      passwdFile: dovecot.passwdFile,
    },
  );
  const chromium = await startSharedChromium();
  project.provide('keelChromiumCdp', chromium?.endpoint);
  return async () => {
    await redis?.stop();
    await dovecot?.stop();
    await chromium?.stop();
  };
}
