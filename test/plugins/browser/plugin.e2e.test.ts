/**
 * The browser plugin's rules that do not depend on the engine, through a real kernel on engineA: the blank-page
 * circuit breaker (no display here: the error says so), the address guard shared with http_fetch
 * (webAllowPrivateNetwork, the web plugin's checkHost), tracker blocking from the shipped Ghostery list, engineC's
 * endpoint rules (admin for a remote one; SPEC's `ws://host:port` form found through the DevTools server), and the
 * idle close.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { trackerOf } from '../../../plugins/browser/src/trackers.js';
import { displayAvailable } from '../../../plugins/browser/src/xvfb.js';
import { bootBrowser, haveChromium, startCdpChromium, startFixtures, stranger, type Booted, type Fixture } from './harness.js';

describe('tracker blocking from @ghostery/trackerdb', () => {
  it('blocks advertising and analytics requests and lets ordinary ones through', async () => {
    expect(await trackerOf('https://www.google-analytics.com/collect?v=1', 'xhr', 'https://news.example.org/')).toMatch(/site_analytics/);
    expect(await trackerOf('https://securepubads.g.doubleclick.net/gampad/ads', 'script', 'https://news.example.org/')).toMatch(
      /advertising/,
    );
    expect(await trackerOf('https://example.org/app.js', 'script', 'https://example.org/')).toBeUndefined();
    expect(await trackerOf('http://127.0.0.1:8080/', 'document')).toBeUndefined();
  });
});

describe.skipIf(!haveChromium)('browser plugin (engineA)', () => {
  let fx: Fixture;
  let b: Booted;
  const ok = (name: string, args: Record<string, unknown> = {}) => b.ok(name, args);

  beforeAll(async () => {
    fx = await startFixtures();
    b = await bootBrowser({});
  }, 60_000);

  afterAll(async () => {
    await b?.close();
    await fx?.close();
  });

  it('needs a page first', async () => {
    const r = await b.run('browser_click', { selector_or_ref: 1 });
    expect(r.success).toBe(false);
    expect(r.result).toMatch(/No page is open yet: open one with browser_navigate first/);
  });

  it('circuit breaker: at most 3 recovery attempts per blank load; 3 blank loads of a domain → headful, which needs a display; success clears', async () => {
    for (let i = 1; i <= 3; i++) {
      const out = await ok('browser_navigate', { url: `${fx.base}/blank` });
      expect(out).toContain('State: blank');
      expect(out).toContain('The page stayed blank after 3 recovery attempts. Cause: blocked automation or a failed render.');
      if (i < 3) expect(out).toContain('Retry headful or use a fresh profile');
      else if (displayAvailable()) expect(out).toMatch(/127\.0\.0\.1 gave 3 blank pages in a row: the browser now runs headful/);
      else
        expect(out).toMatch(
          /127\.0\.0\.1 gave 3 blank pages in a row: headful mode is next, but it needs a display and there is none \(DISPLAY is not set and Xvfb is not installed/,
        );
    }
    await ok('browser_navigate', { url: `${fx.base}/` });
    const again = await ok('browser_navigate', { url: `${fx.base}/blank` });
    expect(again).not.toContain('in a row');
  }, 60_000);

  it('refuses loopback and private addresses like http_fetch unless webAllowPrivateNetwork, and other schemes always', async () => {
    await b.kernel.config.set('webAllowPrivateNetwork', false, { kind: 'operator' });
    try {
      const r = await b.run('browser_navigate', { url: `${fx.base}/` });
      expect(r.success).toBe(false);
      expect(r.result).toMatch(/Refused to open http:\/\/127\.0\.0\.1:\d+\/: 127\.0\.0\.1 is loopback/);
      const fetched = await b.run('http_fetch', { url: `${fx.base}/` });
      expect(fetched.result).toMatch(/Refused to fetch/);
      const priv = await b.run('browser_navigate', { url: 'http://10.1.2.3/' });
      expect(priv.result).toMatch(/10\.1\.2\.3 is private/);
    } finally {
      await b.kernel.config.set('webAllowPrivateNetwork', true, { kind: 'operator' });
    }
    const file = await b.run('browser_navigate', { url: 'file:///etc/passwd' });
    expect(file.result).toMatch(/Only http and https URLs can be opened/);
  });

  it('engineC: a remote endpoint needs an admin; SPEC’s ws://host:port form is found through the DevTools server; a dead endpoint is a clear error', async () => {
    const remote = await b.run('switch_browser_engine', { engine: 'engineC', endpoint: 'ws://203.0.113.9:9222' }, stranger);
    expect(remote).toMatchObject({ success: false, code: 'KEEL_E_FORBIDDEN' });
    const cdp = await startCdpChromium();
    try {
      const port = new URL(cdp.endpoint).port;
      expect(await ok('switch_browser_engine', { engine: 'engineC', endpoint: `ws://127.0.0.1:${port}` })).toBe(
        `Switched to engineC (CDP endpoint ws://127.0.0.1:${port}); it starts with the next browser skill.`,
      );
      expect(await ok('browser_navigate', { url: `${fx.base}/` })).toContain('Welcome home');
    } finally {
      cdp.close();
    }
    await ok('switch_browser_engine', { engine: 'engineC', endpoint: 'ws://127.0.0.1:9' });
    const dead = await b.run('browser_navigate', { url: `${fx.base}/` });
    expect(dead).toMatchObject({ success: false, code: 'KEEL_E_PLUGIN_ENVIRONMENT' });
    expect(dead.result).toMatch(/Cannot connect to the CDP endpoint ws:\/\/127\.0\.0\.1:9 \(engineC\)/);
    await ok('switch_browser_engine', { engine: 'engineA' });
    expect(await ok('browser_navigate', { url: `${fx.base}/` })).toContain('Welcome home');
  }, 60_000);

  it('closes the browser when idle (browserIdleCloseMinutes) and starts it again on the next skill', async () => {
    await ok('browser_navigate', { url: `${fx.base}/` });
    await b.kernel.config.set('browserIdleCloseMinutes', 0.005, { kind: 'operator' }); // 300 ms
    await ok('browser_examine_page'); // re-arms the idle timer with the new setting
    const closed = () => b.kernel.logs.recent({ limit: 200 }).some((e) => /Browser closed: idle for 0\.005 minute/.test(e.message));
    for (let i = 0; i < 50 && !closed(); i++) await new Promise((r) => setTimeout(r, 100));
    expect(closed()).toBe(true);
    await b.kernel.config.set('browserIdleCloseMinutes', 10, { kind: 'operator' });
    const started = b.kernel.logs.recent({ limit: 200 }).filter((e) => /Browser started/.test(e.message)).length;
    expect(await ok('browser_navigate', { url: `${fx.base}/` })).toContain('Welcome home');
    expect(b.kernel.logs.recent({ limit: 200 }).filter((e) => /Browser started/.test(e.message)).length).toBe(started + 1);
  });
});
