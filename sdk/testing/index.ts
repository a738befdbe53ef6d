/**
 * Test support for plugin authors and Keel's own tests.
 *
 * @example
 * const home = await tempHome();
 * installFakeAgent(home);            // a plugin that provides `agent` without a model
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Folder of the fake agent plugin (manifest.json + index.js). */
export const FAKE_AGENT_DIR = join(import.meta.dirname, 'fake-agent');

/** A fresh temporary KEEL_HOME. */
export function tempHome(prefix = 'keel-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Remove a temporary KEEL_HOME. */
export function removeHome(home: string): void {
  rmSync(home, { recursive: true, force: true });
}

/** Copy the fake agent into `$home/plugins/fake-agent`, where the kernel discovers user plugins. */
export function installFakeAgent(home: string): void {
  cpSync(FAKE_AGENT_DIR, join(home, 'plugins', 'fake-agent'), { recursive: true });
}
