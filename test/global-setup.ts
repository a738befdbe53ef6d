/**
 * Builds dist/ once before the suite, so CLI tests run the same compiled `keel` a user runs.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export default function setup(): void {
  const root = join(import.meta.dirname, '..');
  if (existsSync(join(root, 'scripts', 'build.mjs'))) {
    execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' });
  }
}
