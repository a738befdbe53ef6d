/**
 * The bootstrap Node (the system's, which only has to run npm) against what package.json and the README promise:
 * `npx keel` on it runs Keel on the pinned Node 24 without npm's EBADENGINE warnings about our own package.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rm, tmp } from '../helpers.js';

const ROOT = join(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  engines: { node: string };
  dependencies: Record<string, string>;
};
const SYSTEM_NPX = '/usr/bin/npx';

describe('bootstrap Node requirement', () => {
  it('engines.node is the bootstrap minimum the README states, and Keel pins its own runtime', () => {
    const min = /^>=(\d+)$/.exec(pkg.engines.node)?.[1];
    expect(min, 'engines.node is a plain minimum major').toBeDefined();
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    expect(readme).toContain(`Node ${min} or newer`);
    expect(readme).toContain(`\`>=${min}\``);
    // A dependency, not a dev one: a global or production install gets the Node it runs on too (kernel/cli/node-guard.ts).
    expect(pkg.dependencies.node).toMatch(/^24\./);
  });

  it.skipIf(!existsSync(SYSTEM_NPX))('`npx keel --version` on the system Node prints the version and no EBADENGINE warning', async () => {
    const home = tmp('keel-bootstrap-');
    try {
      // Only the system's directories on PATH: npx must find our bin and put node_modules/.bin (Node 24) first itself.
      const env: Record<string, string> = { PATH: '/usr/bin:/bin', HOME: home, KEEL_HOME: home, npm_config_update_notifier: 'false' };
      const out = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(SYSTEM_NPX, ['--no-install', 'keel', '--version'], { cwd: ROOT, env, timeout: 60_000 }, (err, stdout, stderr) => {
          resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
        });
      });
      expect(out.code, out.stderr).toBe(0);
      expect(out.stdout.trim()).toBe(pkg.version);
      expect(out.stderr).not.toMatch(/EBADENGINE/);
    } finally {
      rm(home);
    }
  });
});
