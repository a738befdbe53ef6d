/**
 * Issue 39.4: the run starts one headless Chromium (test/global-setup.ts, test/chromium-server.ts) and provides its
 * CDP endpoint as `keelChromiumCdp`; `openBrowser()` opens a fresh BrowserContext in it per call, so files share
 * the browser process but never cookies or storage, and closing one leaves the shared browser up.
 */
import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { describe, expect, inject, it } from 'vitest';
import { CHROMIUM, openBrowser } from './browser.js';

describe.skipIf(!existsSync(CHROMIUM))('the run shares one Chromium', () => {
  it('the global set-up provides its CDP endpoint', () => {
    expect(inject('keelChromiumCdp')).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/devtools\/browser\//);
  });

  it('openBrowser() opens an isolated context in it: no cookies or storage cross, and close() leaves it up', async () => {
    const endpoint = inject('keelChromiumCdp')!;
    const a = await openBrowser();
    const b = await openBrowser({ width: 800, height: 600 });
    const watcher = await chromium.connectOverCDP(endpoint);
    try {
      // Both are contexts of a connected browser (a launched persistent context has none).
      expect(a.context.browser()).not.toBeNull();
      const pa = await a.context.newPage();
      const pb = await b.context.newPage();
      await pa.goto('data:text/html,<title>from-a</title>');
      expect(pb.viewportSize()).toEqual({ width: 800, height: 600 });
      // The page is a target of the shared browser, seen from another connection to its endpoint.
      const cdp = await watcher.newBrowserCDPSession();
      const { targetInfos } = (await cdp.send('Target.getTargets')) as { targetInfos: { title: string; type: string }[] };
      expect(targetInfos.some((t) => t.type === 'page' && t.title === 'from-a')).toBe(true);
      await a.context.addCookies([{ name: 'keel', value: 'a-only', domain: '127.0.0.1', path: '/' }]);
      expect((await a.context.cookies()).map((c) => c.value)).toEqual(['a-only']);
      expect(await b.context.cookies()).toEqual([]);
      await a.close();
      await b.close();
      expect(watcher.isConnected()).toBe(true);
      const after = await openBrowser();
      expect(await after.context.cookies()).toEqual([]);
      await after.close();
    } finally {
      await watcher.close();
    }
  }, 60_000);
});
