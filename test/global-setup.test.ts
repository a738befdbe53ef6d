/**
 * Issue 36.2: the test set-up installs every Debian package the tests drive, Chromium included (about 130 browser
 * and dashboard tests skipped on a fresh machine when it did not), and says which suites skip when it cannot.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { installTestPackages, TEST_PACKAGES, type SetupDeps } from './global-setup.js';

function fakeMachine(o: { installed: string[]; isRoot: boolean; apt: boolean; aptWorks: boolean }) {
  const installed = new Set(o.installed);
  const calls: string[][] = [];
  const lines: string[] = [];
  const byPkg = new Map(TEST_PACKAGES.map((p) => [p.pkg, p.program]));
  const deps: SetupDeps = {
    have: (p) => (p === 'apt-get' ? o.apt : installed.has(p)),
    run: (cmd, args) => {
      calls.push([cmd, ...args]);
      if (cmd === 'apt-get' && args[0] === 'install' && o.aptWorks) {
        for (const a of args.slice(1)) if (byPkg.has(a)) installed.add(byPkg.get(a)!);
        return { status: 0 };
      }
      return { status: cmd === 'apt-get' ? 100 : 0, stderr: 'E: Unable to locate package' };
    },
    isRoot: o.isRoot,
    log: (l) => lines.push(l),
  };
  return { deps, calls, lines };
}

describe('test set-up: Debian packages', () => {
  it('lists Chromium beside the servers, as .ci/run does', () => {
    const ci = readFileSync(join(import.meta.dirname, '..', '.ci', 'run'), 'utf8');
    for (const p of TEST_PACKAGES) expect(ci).toContain(p.pkg);
    expect(TEST_PACKAGES.map((p) => p.pkg)).toContain('chromium');
  });

  it('as root with apt, installs what is missing (Chromium too) in one apt-get call and stops the services it started', () => {
    const m = fakeMachine({ installed: ['tmux', 'openssl', 'busybox'], isRoot: true, apt: true, aptWorks: true });
    expect(installTestPackages(m.deps)).toEqual([]);
    const install = m.calls.find((c) => c[0] === 'apt-get' && c[1] === 'install');
    expect(install).toEqual(expect.arrayContaining(['chromium', 'dovecot-imapd', 'redis-server']));
    expect(m.calls.some((c) => c[0] === 'sh' && /stop redis-server/.test(c[2] ?? ''))).toBe(true);
    expect(m.lines.join('\n')).toMatch(/installing Debian packages the tests need: chromium dovecot-imapd redis-server/);
  });

  it('nothing to do when everything is there', () => {
    const m = fakeMachine({ installed: TEST_PACKAGES.map((p) => p.program), isRoot: true, apt: true, aptWorks: true });
    expect(installTestPackages(m.deps)).toEqual([]);
    expect(m.calls).toEqual([]);
  });

  it('says which suites will skip, and why, when it cannot install', () => {
    const notRoot = fakeMachine({
      installed: ['tmux', 'openssl', 'busybox', 'dovecot', 'redis-server'],
      isRoot: false,
      apt: true,
      aptWorks: true,
    });
    expect(installTestPackages(notRoot.deps)).toEqual(['chromium']);
    expect(notRoot.calls).toEqual([]);
    expect(notRoot.lines.join('\n')).toMatch(
      /chromium is missing \(this user is not root.*\); the tests of the browser plugin and the dashboard will be skipped/,
    );
    const broken = fakeMachine({ installed: [], isRoot: true, apt: true, aptWorks: false });
    expect(installTestPackages(broken.deps)).toHaveLength(TEST_PACKAGES.length);
    expect(broken.calls.some((c) => c[1] === 'update')).toBe(true);
    expect(broken.lines.join('\n')).toMatch(/apt-get could not install it/);
  });
});
