/**
 * The dashboard's skills page lists a skill that cannot work yet (web_search without a search key) with what it
 * needs, in a real browser (Debian's chromium) against a running gateway on 127.0.0.1.
 */
import { existsSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gw } from '../gateway/harness.js';
import { CHROMIUM, openBrowser } from './browser.js';

describe.skipIf(!existsSync(CHROMIUM))('dashboard skills page', () => {
  let g: Gw | undefined;
  let browser: Awaited<ReturnType<typeof openBrowser>> | undefined;
  let page: Page;

  beforeAll(async () => {
    g = await startGateway({ fakeAgent: true });
    browser = await openBrowser();
    page = await browser.context.newPage();
    await page.goto(`${g.base}/`);
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await g?.close();
  });

  it('shows web_search with "needs searchAApiKey or searchBApiKey"', async () => {
    await page.evaluate(`location.hash = '#/skills'`);
    await page.locator('main[data-page="skills"] h1').waitFor({ timeout: 15_000 });
    const item = page.getByTestId('skill').filter({ hasText: 'web_search' }).first();
    await item.waitFor({ timeout: 15_000 });
    expect(await item.getByTestId('skill-needs').textContent()).toBe('needs searchAApiKey or searchBApiKey');
    // A skill that works has no such note.
    const fetchItem = page.getByTestId('skill').filter({ hasText: 'http_fetch' }).first();
    expect(await fetchItem.getByTestId('skill-needs').count()).toBe(0);
  }, 60_000);
});
