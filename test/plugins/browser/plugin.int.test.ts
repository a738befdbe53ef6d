/**
 * The browser plugin through a real kernel: its skills over Debian's Chromium (engineA by default, engineB and
 * engineC switched to), pages served from 127.0.0.1, the kernel's admin rule, the address refusal, the blank-page
 * breaker, profiles, the mobile viewport, CAPTCHA solving against a loopback 2captcha-compatible server, vision
 * through the fake provider. Skipped (with the reason) when /usr/bin/chromium is missing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { discoverBuiltins } from '../../../kernel/plugins/discover.js';
import type { Actor } from '../../../sdk/index.js';
import { installFakeProvider, type FakeProviderControl } from '../../../sdk/testing/index.js';
import { rm, tmp } from '../../helpers.js';
import { agentCandidate } from '../agent/harness.js';

const CHROMIUM = '/usr/bin/chromium';
const ROOT = join(import.meta.dirname, '..', '..', '..');
const have = existsSync(CHROMIUM);
if (!have) console.warn(`browser tests skipped: ${CHROMIUM} is missing (apt-get install chromium)`);

const PAGES: Record<string, string> = {
  '/form': `<!doctype html><title>Sign in</title>
    <a href="/">Home</a>
    <form action="/done" method="get">
      <label for="email">Email</label><input id="email" name="email">
      <input type="password" name="pw" placeholder="Password" value="hunter2">
      <select name="country" aria-label="Country"><option value="fr">France</option><option value="de">Germany</option></select>
      <button type="submit">Sign in</button>
    </form>`,
  '/done': `<!doctype html><title>Done</title><p id="msg">Thanks</p><script>document.getElementById('msg').textContent = 'Thanks ' + location.search;</script>`,
  '/': `<!doctype html><title>Home</title><h1>Welcome home</h1><a href="/form">Form</a>`,
  '/blank': `<!doctype html><title></title><body></body>`,
  '/late': `<!doctype html><title>Late</title><p>wait</p><script>setTimeout(() => { const b = document.createElement('button'); b.id = 'late'; b.textContent = 'Late'; document.body.append(b); }, 300);</script>`,
  '/captcha': `<!doctype html><title>Captcha</title><form><div class="g-recaptcha" data-sitekey="6Lc-test-sitekey" data-callback="onSolved"></div></form>
    <script>window.solved = null; function onSolved(t) { window.solved = t; }</script>`,
  '/storage': `<!doctype html><title>Storage</title><p>storage</p>`,
};

let server: Server;
let base = '';
let captchaServer: Server;
let captchaUrl = '';
const captchaCalls: string[] = [];
let k: Kernel;
let home: string;
let fake: FakeProviderControl;
const dirs: string[] = [];
const operator: Actor = { kind: 'operator', channel: 'cli' };
const stranger: Actor = { kind: 'user', channel: 'chatA', userId: '999' };

const run = async (name: string, args: Record<string, unknown> = {}, actor: Actor = operator) => k.execute(name, args, actor);
const ok = async (name: string, args: Record<string, unknown> = {}) => {
  const r = await run(name, args);
  expect(r.success, `${name}: ${r.result}`).toBe(true);
  return r.result;
};

describe.skipIf(!have)('browser plugin', () => {
  beforeAll(async () => {
    delete process.env.DISPLAY;
    server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0]!;
      const page = PAGES[path];
      res.writeHead(page ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
      res.end(page ?? '<title>404</title><p>not found</p>');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    captchaServer = createServer((req, res) => {
      captchaCalls.push(req.url ?? '');
      res.setHeader('content-type', 'application/json');
      if (req.url?.startsWith('/in.php')) {
        let body = '';
        req.on('data', (d) => (body += d));
        req.on('end', () => {
          const f = new URLSearchParams(body);
          const good = f.get('key') === 'captcha-key-123' && f.get('googlekey') === '6Lc-test-sitekey';
          res.end(JSON.stringify(good ? { status: 1, request: 'job-1' } : { status: 0, request: 'ERROR_WRONG_USER_KEY' }));
        });
        return;
      }
      res.end(JSON.stringify({ status: 1, request: 'TOKEN-XYZ' }));
    });
    await new Promise<void>((r) => captchaServer.listen(0, '127.0.0.1', () => r()));
    captchaUrl = `http://127.0.0.1:${(captchaServer.address() as { port: number }).port}`;

    home = tmp('keel-browser-');
    const builtins = tmp('keel-browser-builtins-');
    dirs.push(home, builtins);
    fake = installFakeProvider(home);
    writeFileSync(
      join(home, 'keel.config.yaml'),
      `${JSON.stringify({ llmProvider: 'fake', modelName: 'fake-model', browserAllowPrivateNetwork: true, captchaApiUrl: captchaUrl, adminUsers: { chatA: ['1'] } }, null, 2)}\n`,
    );
    const all = await discoverBuiltins(join(ROOT, 'plugins'));
    const pick = (id: string) => all.find((c) => c.id === id)!;
    k = await startKernel({
      home,
      builtinDir: builtins,
      extraPlugins: [await agentCandidate(), pick('browser'), pick('web')],
      env: {},
      watchSkills: false,
      logs: new LogSink({ quiet: true }),
    });
  }, 60_000);

  afterAll(async () => {
    await k?.stop();
    await new Promise<void>((r) => server?.close(() => r()));
    await new Promise<void>((r) => captchaServer?.close(() => r()));
    for (const d of dirs) rm(d);
  });

  it('navigates and returns the numbered snapshot of SPEC, marked untrusted, with passwords masked', async () => {
    const out = await ok('browser_navigate', { url: `${base}/form` });
    expect(out).toContain(`[untrusted page content from ${base}/form]`);
    expect(out).toContain('Status: 200');
    expect(out).toContain('Page: Sign in');
    expect(out).toMatch(/\[1\] link: Home \(href=\/\)/);
    expect(out).toMatch(/\[2\] textbox: Email \(name=email\)/);
    expect(out).toMatch(/\[3\] input password: Password \(value=\*\*\*\)/);
    expect(out).not.toContain('hunter2');
    expect(out).toMatch(/\[4\] select: Country \(selected=France\)/);
    expect(out).toMatch(/\[5\] button: Sign in/);
  });

  it('types into a numbered field, selects by label, clicks by number, and goes back', async () => {
    await ok('browser_navigate', { url: `${base}/form` });
    expect(await ok('browser_type', { selector_or_ref: 2, text: 'ada@example.test' })).toMatch(/Typed 16 character\(s\) into input/);
    expect(await ok('browser_select', { selector: 'select[name=country]', value: 'Germany' })).toMatch(/value de/);
    const clicked = await ok('browser_click', { selector_or_ref: 5 });
    expect(clicked).toMatch(/Clicked button "Sign in"/);
    await ok('browser_wait_for', { selector: '#msg' });
    const page = await ok('browser_examine_page');
    expect(page).toContain('email=ada%40example.test');
    expect(page).toContain('country=de');
    expect(await ok('browser_back')).toContain(`Now at ${base}/form`);
  });

  it('submits with a key press, waits for a late element, scrolls, and evaluates JavaScript', async () => {
    await ok('browser_navigate', { url: `${base}/form` });
    await ok('browser_type', { selector_or_ref: '#email', text: 'x@y.z', slow: true });
    expect(await ok('browser_press', { key: 'Enter' })).toContain('/done?');
    await ok('browser_navigate', { url: `${base}/late` });
    expect(await ok('browser_wait_for', { selector: '#late', timeout: 5000 })).toMatch(/#late is present/);
    expect(await ok('browser_run_js', { script: 'document.title + " " + (1 + 2)' })).toBe('"Late 3"');
    expect(await ok('browser_run_js', { script: 'let n = 20; n + 1;' })).toBe('21');
    const missing = await run('browser_click', { selector_or_ref: 99 });
    expect(missing.success).toBe(false);
    expect(missing.result).toMatch(/Element not found: \[99\].*examine the page.*wait for the element/s);
    expect(await ok('browser_scroll', { direction: 'down' })).toMatch(/Scrolled down 500 px/);
  });

  it('saves a PNG screenshot under $KEEL_HOME/downloads', async () => {
    await ok('browser_navigate', { url: `${base}/` });
    const path = await ok('browser_screenshot', { fullPage: true });
    expect(path.startsWith(join(home, 'downloads'))).toBe(true);
    expect(readFileSync(path).subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
  });

  it('refuses browser_run_script to a non-admin at dispatch, and runs it with page and browser for an admin', async () => {
    const refused = await run('browser_run_script', { code: 'return 1' }, stranger);
    expect(refused).toMatchObject({ success: false, code: 'KEEL_E_FORBIDDEN' });
    await ok('browser_navigate', { url: `${base}/` });
    const out = await ok('browser_run_script', { code: `console.log('title', await page.title()); return typeof browser;` });
    expect(out).toContain('title Home');
    expect(out).toContain('Result: "object"');
  });

  it('feeds the blank-page circuit breaker: recovery attempts, then the headful switch (no display here)', async () => {
    for (let i = 1; i <= 3; i++) {
      const out = await ok('browser_navigate', { url: `${base}/blank` });
      expect(out).toContain('stayed blank after 3 recovery attempts');
      if (i < 3) expect(out).not.toContain('blank pages in a row');
      else expect(out).toMatch(/127\.0\.0\.1 gave 3 blank pages in a row: headful mode would be next, but there is no display/);
    }
    // A page with content clears the count.
    await ok('browser_navigate', { url: `${base}/` });
    expect(await ok('browser_navigate', { url: `${base}/blank` })).not.toContain('in a row');
  }, 60_000);

  it('switches to the mobile viewport of SPEC and back', async () => {
    await ok('browser_navigate', { url: `${base}/` });
    expect(await ok('set_viewport_mode', { mode: 'mobile' })).toMatch(/375x812, scale 2, touch on/);
    await ok('browser_navigate', { url: `${base}/` });
    const seen = JSON.parse(await ok('browser_run_js', { script: '({ w: innerWidth, dpr: devicePixelRatio, mobile: /Mobile/.test(navigator.userAgent), touch: navigator.maxTouchPoints > 0 })' }));
    expect(seen).toEqual({ w: 375, dpr: 2, mobile: true, touch: true });
    await ok('set_viewport_mode', { mode: 'desktop' });
    await ok('browser_navigate', { url: `${base}/` });
    expect(await ok('browser_run_js', { script: 'innerWidth' })).toBe('1366');
  }, 60_000);

  it('keeps local storage per profile, and only an admin gives a profile folder', async () => {
    await ok('switch_browser_profile', { profileName: 'alpha' });
    await ok('browser_navigate', { url: `${base}/storage` });
    await ok('browser_run_js', { script: 'localStorage.setItem("who", "alpha"), "set"' });
    expect(existsSync(join(home, 'engineA-profiles', 'alpha'))).toBe(true);
    await ok('switch_browser_profile', { profileName: 'beta' });
    await ok('browser_navigate', { url: `${base}/storage` });
    expect(await ok('browser_run_js', { script: 'localStorage.getItem("who")' })).toBe('null');
    await ok('switch_browser_profile', { profileName: 'alpha' });
    await ok('browser_navigate', { url: `${base}/storage` });
    expect(await ok('browser_run_js', { script: 'localStorage.getItem("who")' })).toBe('"alpha"');
    const elsewhere = tmp('keel-browser-elsewhere-');
    dirs.push(elsewhere);
    const refused = await run('switch_browser_profile', { profileName: 'x', profileDir: elsewhere }, { kind: 'agent', channel: 'chatA', onBehalfOf: { kind: 'user', channel: 'chatA', userId: '1' } });
    expect(refused.success).toBe(true); // an admin (adminUsers.chatA) through the agent may
    const denied = await run('switch_browser_profile', { profileName: 'x', profileDir: elsewhere }, stranger);
    expect(denied).toMatchObject({ success: false, code: 'KEEL_E_FORBIDDEN' });
    await ok('switch_browser_profile', { profileName: 'default' });
  }, 60_000);

  it('runs the same skills on engineB and on engineC (a CDP endpoint), and guards remote endpoints', async () => {
    await ok('switch_browser_engine', { engine: 'engineB' });
    expect(await ok('browser_navigate', { url: `${base}/form` })).toMatch(/\[2\] textbox: Email/);
    await ok('browser_type', { selector_or_ref: 2, text: 'b@b.b' });
    await ok('browser_click', { selector_or_ref: 5 });
    await ok('browser_wait_for', { selector: '#msg' });
    expect(await ok('browser_examine_page')).toContain('email=b%40b.b');
    expect(existsSync(join(home, 'browser-profiles', 'default'))).toBe(true);

    const remote = await run('switch_browser_engine', { engine: 'engineC', endpoint: 'ws://203.0.113.9:9222' }, stranger);
    expect(remote).toMatchObject({ success: false, code: 'KEEL_E_FORBIDDEN' });

    const profile = tmp('keel-cdp-profile-');
    dirs.push(profile);
    const chrome: ChildProcess = spawn(CHROMIUM, ['--headless=new', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--remote-debugging-port=0', `--user-data-dir=${profile}`, 'about:blank'], { stdio: ['ignore', 'ignore', 'pipe'] });
    try {
      const ws = await new Promise<string>((resolve, reject) => {
        let err = '';
        const t = setTimeout(() => reject(new Error(`no DevTools line: ${err}`)), 20_000);
        chrome.stderr!.on('data', (d: Buffer) => {
          err += d.toString();
          const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
          if (m) {
            clearTimeout(t);
            resolve(m[1]!);
          }
        });
      });
      expect(await ok('switch_browser_engine', { engine: 'engineC', endpoint: ws })).toContain('engineC');
      expect(await ok('browser_navigate', { url: `${base}/` })).toContain('Welcome home');
      await ok('switch_browser_engine', { engine: 'engineA' });
    } finally {
      chrome.kill('SIGKILL');
    }
  }, 90_000);

  it('solves a reCAPTCHA through the 2captcha-compatible service, and needs captchaApiKey', async () => {
    await ok('browser_navigate', { url: `${base}/captcha` });
    const nokey = await run('browser_solve_captcha');
    expect(nokey).toMatchObject({ success: false, code: 'KEEL_E_PLUGIN_ENVIRONMENT' });
    expect(nokey.result).toMatch(/captchaApiKey/);
    await k.config.set('captchaApiKey', 'captcha-key-123', { kind: 'operator' });
    const out = await ok('browser_solve_captcha');
    expect(out).toMatch(/Solved the recaptcha/i);
    expect(out).not.toContain('captcha-key-123');
    expect(await ok('browser_run_js', { script: 'window.solved' })).toBe('"TOKEN-XYZ"');
    expect(await ok('browser_run_js', { script: 'document.querySelector("[name=g-recaptcha-response]").value' })).toBe('"TOKEN-XYZ"');
    expect(captchaCalls.some((u) => u.startsWith('/in.php'))).toBe(true);
  }, 60_000);

  it('describes the page with a vision-capable model, and says which providers can when the current one cannot', async () => {
    await ok('browser_navigate', { url: `${base}/` });
    fake.vision = false;
    const blind = await run('browser_vision');
    expect(blind).toMatchObject({ success: false, code: 'KEEL_E_PLUGIN_ENVIRONMENT' });
    expect(blind.result).toMatch(/cannot read images/);
    fake.vision = true;
    fake.replies.push({ text: 'A page that says Welcome home.' });
    const out = await ok('browser_vision', { prompt: 'What does it say?' });
    expect(out).toContain('A page that says Welcome home.');
    const call = fake.calls.at(-1)!;
    const user = call.messages.find((m) => m.role === 'user') as { content: string; images?: Array<{ mimeType: string; base64: string }> };
    expect(user.content).toBe('What does it say?');
    expect(user.images?.[0]?.mimeType).toBe('image/png');
    expect(Buffer.from(user.images![0]!.base64, 'base64').subarray(0, 4).toString('hex')).toBe('89504e47');
  });

  it('refuses loopback and private addresses unless browserAllowPrivateNetwork, and other schemes always', async () => {
    await k.config.set('browserAllowPrivateNetwork', false, { kind: 'operator' });
    try {
      const r = await run('browser_navigate', { url: `${base}/` });
      expect(r.success).toBe(false);
      expect(r.result).toMatch(/Refused to open .*127\.0\.0\.1 is loopback/);
      const file = await run('browser_navigate', { url: 'file:///etc/passwd' });
      expect(file.result).toMatch(/Only http and https URLs/);
    } finally {
      await k.config.set('browserAllowPrivateNetwork', true, { kind: 'operator' });
    }
  });

  it('reports a page skill before any page, and starts again after the browser died', async () => {
    // The browser is running from the tests above: kill it under the plugin, then use it.
    const out = await ok('browser_run_script', { code: 'const b = browser; await (b.close ? b.close() : b.browser().close()); return "closed";' });
    expect(out).toContain('closed');
    expect(await ok('browser_navigate', { url: `${base}/` })).toContain('Welcome home');
  });
});
