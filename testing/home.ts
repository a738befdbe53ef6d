/**
 * Temporary KEEL_HOME folders for tests.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A fresh temporary KEEL_HOME.
 * @example const home = tempHome(); try { ... } finally { removeHome(home); }
 */
export function tempHome(prefix = 'keel-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/**
 * Remove a temporary KEEL_HOME.
 * @example removeHome(home)
 */
export function removeHome(home: string): void {
  rmSync(home, { recursive: true, force: true });
}
