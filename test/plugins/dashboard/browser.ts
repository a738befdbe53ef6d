/**
 * Debian's chromium through playwright-core for the dashboard tests. In a run with the global set-up, each call opens
 * a fresh, isolated BrowserContext (its own cookies and storage) in the run's shared Chromium (test/chromium-server.ts,
 * `keelChromiumCdp`) and closes it at close(); without it (the unit tier, or the shared one unreachable) it launches a
 * Chromium of its own as before: the flags of DESIGN.md section 9, a fresh profile and its own TMPDIR (chromium
 * leaves folders there), all removed at close.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { CHROMIUM, CHROMIUM_FLAGS, connectSharedChromium } from '../../chromium-server.js';
import { rm, tmp } from '../../helpers.js';

export { CHROMIUM };

type Viewport = { width: number; height: number };

export async function openBrowser(
  viewport: Viewport = { width: 390, height: 844 },
): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const shared = await connectSharedChromium();
  if (shared) {
    const context = await shared.newContext({ viewport });
    return {
      context,
      async close() {
        await context.close().catch(() => undefined);
        await shared.close().catch(() => undefined); // over CDP: disconnects; the shared browser stays up
      },
    };
  }
  const root = tmp('keel-chromium-');
  const profile = join(root, 'profile');
  const tmpdir = join(root, 'tmp');
  mkdirSync(profile, { recursive: true });
  mkdirSync(tmpdir, { recursive: true });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [...CHROMIUM_FLAGS],
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
