/**
 * Debian's chromium through playwright-core for the dashboard tests: the flags of DESIGN.md section 9, a fresh
 * profile and its own TMPDIR (chromium leaves folders there), all removed at close.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { rm, tmp } from '../../helpers.js';

export const CHROMIUM = '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export async function openBrowser(viewport = { width: 390, height: 844 }): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const root = tmp('keel-chromium-');
  const profile = join(root, 'profile');
  const tmpdir = join(root, 'tmp');
  mkdirSync(profile, { recursive: true });
  mkdirSync(tmpdir, { recursive: true });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    env: { ...process.env, TMPDIR: tmpdir } as Record<string, string>,
    viewport,
    timeout: 60_000,
  });
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      rm(root);
    },
  };
}
