/**
 * The parity suite: every browser skill through a real kernel on engineA (playwright-core), engineB
 * (puppeteer-core) and engineC (a Chromium started here with --remote-debugging-port=0), against the fixture
 * pages on 127.0.0.1, with the same expected results on all three. One browser per engine.
 */
import { readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { encode } from 'gpt-tokenizer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bootBrowser,
  DOWNLOAD_BYTES,
  haveChromium,
  pngSize,
  startCdpChromium,
  startFixtures,
  stranger,
  type Booted,
  type Fixture,
} from './harness.js';

if (!haveChromium) console.warn('browser parity suite skipped: /usr/bin/chromium is missing (apt-get install chromium)');

describe.skipIf(!haveChromium).each(['engineA', 'engineB', 'engineC'] as const)('%s', (engine) => {
  let fx: Fixture;
  let b: Booted;
  let cdp: Awaited<ReturnType<typeof startCdpChromium>> | undefined;
  const ok = (name: string, args: Record<string, unknown> = {}) => b.ok(name, args);
  const js = async (script: string) => JSON.parse(await ok('browser_run_js', { script })) as unknown;

  beforeAll(async () => {
    fx = await startFixtures();
    if (engine === 'engineC') cdp = await startCdpChromium();
    b = await bootBrowser({ browserEngine: engine, captchaBaseUrl: fx.captchaUrl, ...(cdp ? { browserCdpEndpoint: cdp.endpoint } : {}) });
  }, 60_000);

  afterAll(async () => {
    await b?.close();
    cdp?.close();
    await fx?.close();
  });

  it('navigates: untrusted marker with the URL (once), title, the numbered elements of SPEC, passwords masked, outline', async () => {
    const out = await ok('browser_navigate', { url: `${fx.base}/form` });
    // "ok" goes without saying: no State line; the URL is in the marker, not repeated.
    expect(out.split('\n').slice(0, 3)).toEqual([`[untrusted page content from ${fx.base}/form]`, 'Page: Form', '']);
    expect(out.split(`${fx.base}/form`)).toHaveLength(2);
    expect(out).toContain(
      [
        'Interactive elements:',
        '[1] textbox: Email',
        '[2] input password: Secret (value=***)',
        '[3] select: Country (selected=France)',
        '[4] checkbox: News',
        '[5] button: Send',
      ].join('\n'),
    );
    expect(out).toMatch(/Outline:\n# Contact\nHover target/); // the <label> text is [1]'s label, not repeated
    expect(out).not.toContain('hunter2');
  });

  it('types by number (and slowly), selects by visible label, clicks by number: the navigation is reported; back', async () => {
    await ok('browser_navigate', { url: `${fx.base}/form` });
    expect(await ok('browser_type', { selector_or_ref: 1, text: 'a@b.c' })).toMatch(/^Typed 5 character\(s\) into \[1\] textbox "Email"\./);
    expect(await ok('browser_type', { selector_or_ref: '#email', text: 'd', slow: true })).toContain('(slowly, 100 ms per character)');
    expect(await ok('browser_select', { selector: 'select[name=country]', value: 'Germany' })).toMatch(
      /^Selected "Germany" in select .* \(value de\)\./,
    );
    const click = await ok('browser_click', { selector_or_ref: '[5]' });
    expect(click).toMatch(/^Clicked \[5\] button "Send"\.\nThe page navigated to .*\/done\?email=a%40b\.cd&pw=hunter2&country=de/);
    expect(await ok('browser_back')).toBe(`Went back. Now at ${fx.base}/form.`);
  });

  it('presses single keys and combinations; Enter submits the form', async () => {
    await ok('browser_navigate', { url: `${fx.base}/form` });
    await ok('browser_type', { selector_or_ref: 1, text: 'x@y.z' });
    expect(await ok('browser_press', { key: 'Control+A' })).toMatch(/^Pressed Control\+A\./);
    expect(await ok('browser_press', { key: 'Backspace' })).toMatch(/^Pressed Backspace\./);
    await ok('browser_type', { selector_or_ref: 1, text: 'k@l.m' });
    expect(await ok('browser_press', { key: 'Enter' })).toMatch(/The page navigated to .*\/done\?email=k%40l\.m/);
  });

  it('hovers, scrolls 500 px by default, waits, and waits for a slow element (or times out)', async () => {
    await ok('browser_navigate', { url: `${fx.base}/form` });
    expect(await ok('browser_hover', { selector: '#hov' })).toBe('Hovering over div "Hover target".');
    expect(await js('window.hovered === true')).toBe(true);
    await ok('browser_navigate', { url: `${fx.base}/tall` });
    expect(await ok('browser_scroll', { direction: 'down' })).toMatch(/^Scrolled down 500 px; now at 500 of \d+ px\.$/);
    expect(await ok('browser_scroll', { direction: 'up', amount: 200 })).toMatch(/^Scrolled up 200 px; now at 300 of/);
    expect(await ok('browser_wait', { ms: 20 })).toBe('Waited 20 ms.');
    await ok('browser_navigate', { url: `${fx.base}/slow` });
    expect(await ok('browser_wait_for', { selector: '#late' })).toMatch(/^#late is present/);
    const missing = await b.run('browser_wait_for', { selector: '#never', timeout: 300 });
    expect(missing).toMatchObject({ success: false });
    const gone = await b.run('browser_click', { selector_or_ref: '#nothing-here' });
    expect(gone.result).toMatch(/Element not found: #nothing-here\. Cause: selector mismatch or element not yet loaded/);
  }, 60_000);

  it('a ref survives a re-render (found again by fingerprint); ambiguous or gone fails with a fresh snapshot, clicking nothing', async () => {
    await ok('browser_navigate', { url: `${fx.base}/spa` });
    // [1] Refresh re-renders the app: new nodes, another order
    await ok('browser_click', { selector_or_ref: 1 });
    expect(await js('window.refreshed')).toBe(1);
    expect(await ok('browser_click', { selector_or_ref: 2 })).toMatch(
      /^Clicked \[2\] button "Save" \(found again after the page re-rendered\)\./,
    );
    expect(await js('window.saved')).toBe(1);

    const examined = await ok('browser_examine_page');
    expect(examined).toMatch(/^\[untrusted page content from http:\/\/127\.0\.0\.1:\d+\/[^\]\n]*\]\nPage: /);
    expect(examined).toContain('[1] button: Intro\n[2] button: Refresh\n[3] button: Save');
    await js('(render(["Save", "Save"]), 0)');
    const ambiguous = await b.run('browser_click', { selector_or_ref: 3 });
    expect(ambiguous).toMatchObject({ success: false });
    expect(ambiguous.result).toMatch(
      /\[3\] button: Save is no longer one element: the page now has 2 button elements labelled "Save".*Nothing was done\./s,
    );
    // The page's text inside an error is still marked as the page's (untrusted).
    expect(ambiguous.result).toMatch(
      /Fresh snapshot \(the numbers below replace the old ones\):\n\[untrusted page content from http:\/\/127\.0\.0\.1:\d+\//,
    );
    expect(ambiguous.result).toContain('[1] button: Save\n[2] button: Save');
    expect(await js('window.saved')).toBe(1);

    await js('(render(["Intro"]), 0)');
    const gone = await b.run('browser_click', { selector_or_ref: 1 });
    expect(gone.result).toMatch(/\[1\] button: Save is gone: the page changed since the snapshot/);
    expect(gone.result).toContain('[1] button: Intro');
    expect(await js('window.saved')).toBe(1);
  });

  it('numbers elements inside iframes and open shadow roots, and acts on them', async () => {
    const out = await ok('browser_navigate', { url: `${fx.base}/frames` });
    expect(out).toContain('[1] button: Frame button\n[2] button: Shadow button');
    expect(out).toContain('Inside the frame');
    await ok('browser_click', { selector_or_ref: 1 });
    await ok('browser_click', { selector_or_ref: 2 });
    expect(await js('[window.frameClicked, window.shadowClicked]')).toEqual([true, true]);
  });

  it('numbers the elements of a cross-origin iframe (snapshotted in its own document) and acts on them', async () => {
    const out = await ok('browser_navigate', { url: `${fx.base}/xframes` });
    expect(out).toContain('[1] button: Top button\n[2] button: Remote button');
    expect(out).toContain('From another origin');
    expect(await ok('browser_click', { selector_or_ref: 2 })).toMatch(/^Clicked \[2\] button "Remote button"\./);
    expect(await ok('browser_examine_page')).toContain('[2] button: Pressed');
  });

  it('reports a new tab (adopted as the page), a download, a dialog and a file chooser', async () => {
    await ok('browser_navigate', { url: `${fx.base}/popup` });
    expect(await ok('browser_click', { selector_or_ref: 1 })).toContain(
      `A new tab opened and is now the current page: ${fx.base}/popup-target`,
    );
    expect(await ok('browser_examine_page')).toContain('Page: New tab');

    await ok('browser_navigate', { url: `${fx.base}/download` });
    const dl = await ok('browser_click', { selector_or_ref: 1 });
    const m = /Downloaded \S+\/file\.bin to (\S+) \((\d+) bytes\)\./.exec(dl);
    expect(m, dl).not.toBeNull();
    expect(m![1]!.startsWith(join(b.home, 'downloads'))).toBe(true);
    expect(Number(m![2])).toBe(DOWNLOAD_BYTES.length);
    expect(readFileSync(m![1]!)).toEqual(DOWNLOAD_BYTES);
    const direct = await ok('browser_navigate', { url: `${fx.base}/file.bin` });
    expect(direct).toMatch(/^State: download\n/);
    expect(direct).toMatch(new RegExp(`saved to ${join(b.home, 'downloads')}/report(-\\d+)?\\.bin \\(${DOWNLOAD_BYTES.length} bytes\\)`));

    await ok('browser_navigate', { url: `${fx.base}/dialog` });
    expect(await ok('browser_click', { selector_or_ref: 1 })).toContain(
      'A confirm dialog said "Really delete?"; it was accepted (browserDialogPolicy).',
    );
    expect(await js('window.answer')).toBe(true);

    const file = await ok('browser_navigate', { url: `${fx.base}/file` });
    expect(file).toContain('[1] input file: Attachment (accept=*)');
    expect(await ok('browser_click', { selector_or_ref: 1 })).toContain('A file chooser opened (several files)');
  }, 60_000);

  it('reports the page state: HTTP error, network error, login wall, CAPTCHA', async () => {
    expect(await ok('browser_navigate', { url: `${fx.base}/missing` })).toContain('State: HTTP error (HTTP 404)');
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const port = (closed.address() as { port: number }).port;
    await new Promise((r) => closed.close(r));
    const refused = await b.run('browser_navigate', { url: `http://127.0.0.1:${port}/` });
    expect(refused, refused.result).toMatchObject({ success: false });
    expect(refused.result, refused.result).toMatch(
      new RegExp(`State: network error\nCould not open http://127\\.0\\.0\\.1:${port}/: .*ERR_CONNECTION_REFUSED`),
    );
    expect(await ok('browser_navigate', { url: `${fx.base}/login` })).toContain('State: login wall');
    expect(await ok('browser_navigate', { url: `${fx.base}/captcha` })).toMatch(
      /State: bot challenge or CAPTCHA\nNote: CAPTCHA blocked navigation: call browser_solve_captcha/,
    );
  });

  it('keeps a 70,000-token page within the budget, viewport first, with a marker and the rest on the next examine', async () => {
    const out = await ok('browser_navigate', { url: `${fx.base}/big` });
    expect(encode(out).length).toBeLessThan(1200);
    expect(out.length).toBeLessThanOrEqual(4000); // the agent's cut of a tool result: the marker survives it
    expect(out).toContain('[1] button: Top button');
    expect(out).toContain('# Big page');
    expect(out).toMatch(
      /\[truncated: \d+ more interactive element\(s\) and \d+ more line\(s\) of text .* Call browser_examine_page again for the rest/,
    );
    expect(out).not.toContain('Bottom button');
    const part2 = await ok('browser_examine_page');
    expect(part2).toContain('(part 2: what the previous snapshot left out comes first)');
    expect(part2).not.toContain('[1] button: Top button');
    expect(((await js('document.body.innerText.length')) as number) / 4).toBeGreaterThan(60_000);
  });

  it('saves PNG screenshots of the viewport and the full page under downloads/', async () => {
    await ok('browser_navigate', { url: `${fx.base}/tall` });
    const path = await ok('browser_screenshot');
    expect(path.startsWith(join(b.home, 'downloads'))).toBe(true);
    expect(pngSize(readFileSync(path))).toEqual({ width: 1366, height: 768 });
    const full = pngSize(readFileSync(await ok('browser_screenshot', { fullPage: true })));
    expect(full.width).toBe(1366);
    expect(full.height).toBeGreaterThanOrEqual(3000);
  });

  it('runs JavaScript (JSON result) and, for an admin only, a script with page and browser', async () => {
    await ok('browser_navigate', { url: `${fx.base}/` });
    expect(await ok('browser_run_js', { script: '({ a: 1 + 1, t: document.title })' })).toBe('{"a":2,"t":"Home"}');
    expect(await ok('browser_run_script', { code: 'console.log("hi"); return (await page.title()) + (browser ? "+browser" : "");' })).toBe(
      'Output:\nhi\nResult: "Home+browser"',
    );
    expect(await b.run('browser_run_script', { code: 'return 1' }, stranger)).toMatchObject({ success: false, code: 'KEEL_E_FORBIDDEN' });
  });

  it('captures console errors and, when enabled, XHR/fetch requests', async () => {
    await b.kernel.config.set('browserInterceptRequests', true, { kind: 'operator' });
    await ok('browser_navigate', { url: `${fx.base}/console` });
    await ok('browser_wait', { ms: 200 });
    const out = await ok('browser_examine_page');
    expect(out).toMatch(/Console errors and warnings \(\d+ latest\):\n(- .*\n)*- error: boom from the page/);
    expect(out).toContain(`- GET ${fx.base}/api/ping -> 200`);
  });

  it('switches to the mobile viewport of SPEC and back to desktop', async () => {
    expect(await ok('set_viewport_mode', { mode: 'mobile' })).toMatch(/^Viewport mobile: 375x812, scale 2, touch on/);
    await ok('browser_navigate', { url: `${fx.base}/vp` });
    expect(
      await js(
        '({ w: innerWidth, dpr: devicePixelRatio, mobile: /Mobile/.test(navigator.userAgent), touch: navigator.maxTouchPoints > 0 })',
      ),
    ).toEqual({ w: 375, dpr: 2, mobile: true, touch: true });
    await ok('set_viewport_mode', { mode: 'desktop' });
    await ok('browser_navigate', { url: `${fx.base}/vp` });
    expect(await js('innerWidth')).toBe(1366);
  });

  it('solves a CAPTCHA with the loopback 2captcha-compatible solver', async () => {
    await ok('browser_navigate', { url: `${fx.base}/captcha` });
    await b.kernel.config.set('captchaApiKey', 'captcha-key-123', { kind: 'operator' });
    const out = await ok('browser_solve_captcha');
    expect(out).toMatch(/^Solved the recaptcha/i);
    expect(await js('window.solved')).toBe('TOKEN-XYZ');
  });

  it('describes the page with a vision-capable model (a PNG of the page is sent)', async () => {
    await ok('browser_navigate', { url: `${fx.base}/` });
    b.fake.vision = true;
    b.fake.replies.push({ text: 'A page that says Welcome home.' });
    expect(await ok('browser_vision')).toContain('A page that says Welcome home.');
    const user = b.fake.calls.at(-1)!.messages.find((m) => m.role === 'user') as { images?: Array<{ base64: string }> };
    expect(pngSize(Buffer.from(user.images![0]!.base64, 'base64'))).toEqual({ width: 1366, height: 768 });
  });

  it('reports a crash with its cause and starts a fresh browser on the next call', async () => {
    await ok('browser_navigate', { url: `${fx.base}/` });
    await ok('browser_run_script', {
      code: 'await page.goto("chrome://crash").catch(() => undefined); await new Promise((r) => setTimeout(r, 1000)); return "crashed"',
    });
    const next = await ok('browser_navigate', { url: `${fx.base}/` });
    expect(next).toMatch(/^\(Browser crashed\. Cause: memory or GPU problems\. Keel started a fresh browser/);
    expect(next).toContain('Welcome home');
  }, 60_000);

  it.skipIf(engine === 'engineC')(
    'keeps a cookie in the profile across a browser restart; profiles are separate',
    async () => {
      await ok('browser_navigate', { url: `${fx.base}/set-cookie` });
      await ok('switch_browser_profile', { profileName: 'other' });
      expect(await ok('browser_navigate', { url: `${fx.base}/echo-cookie` })).toMatch(/^cookie=$/m);
      await ok('switch_browser_profile', { profileName: 'default' });
      expect(await ok('browser_navigate', { url: `${fx.base}/echo-cookie` })).toContain('cookie=keel=kept');
      expect(statSync(join(b.home, engine === 'engineA' ? 'engineA-profiles' : 'browser-profiles', 'other')).isDirectory()).toBe(true);
    },
    60_000,
  );
});
