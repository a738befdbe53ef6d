/**
 * Real servers the tests start (dovecot, redis-server) come from Debian's packages. When one is missing, the set-up
 * installs it (`apt-get install -y <package>`, as root; once per package and run) and stops the system-wide service
 * the package starts (the tests run private instances). Where that cannot be done, the reason comes back, for the
 * suites to skip with.
 */
import { spawnSync } from 'node:child_process';

const tried = new Set<string>();

/** Why `pkg` (which provides what `find` finds) cannot be used here; undefined when it can (installed now or before). */
export function debianPackageProblem(o: { pkg: string; service: string; find: () => string | undefined }): string | undefined {
  if (o.find()) return undefined;
  if (!tried.has(o.pkg) && process.getuid?.() === 0) {
    tried.add(o.pkg);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    let r = spawnSync('apt-get', ['install', '-y', o.pkg], { stdio: 'pipe', env, timeout: 300_000 });
    if (r.status !== 0) {
      spawnSync('apt-get', ['update'], { stdio: 'pipe', env, timeout: 300_000 });
      r = spawnSync('apt-get', ['install', '-y', o.pkg], { stdio: 'pipe', env, timeout: 300_000 });
    }
    spawnSync(
      'sh',
      ['-c', `command -v systemctl >/dev/null && systemctl stop ${o.service}; command -v service >/dev/null && service ${o.service} stop`],
      { stdio: 'pipe' },
    );
    if (o.find()) return undefined;
    return `${o.pkg} could not be installed (apt-get install -y ${o.pkg} exited ${r.status}): ${r.stderr?.toString().trim().split('\n').pop() ?? ''}`;
  }
  return process.getuid?.() === 0
    ? `${o.pkg} is not installed and apt-get could not install it`
    : `${o.pkg} is not installed and this user cannot install it: run \`apt-get install -y ${o.pkg}\` as root (Debian/Ubuntu)`;
}
