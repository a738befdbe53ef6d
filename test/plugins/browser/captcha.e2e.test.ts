/**
 * The browser plugin's CAPTCHA module (plugins/browser/src/captcha.ts): solveCaptcha against a fake 2captcha-compatible
 * service on 127.0.0.1 (the first segment of the base URL's path picks its behaviour), and DETECT_CAPTCHA /
 * INJECT_TOKEN in a real Chromium page (playwright-core over Debian's Chromium; skipped when it is missing) on pages
 * served from 127.0.0.1 with widget markup only: no Google, hCaptcha or Cloudflare script is ever loaded, and any
 * request that leaves 127.0.0.1 is aborted and counted.
 */
import { existsSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DETECT_CAPTCHA,
  INJECT_TOKEN,
  solveCaptcha,
  type CaptchaFound,
  type InjectResult,
  type SolveOptions,
} from '../../../plugins/browser/src/captcha.js';
import { connectSharedChromium } from '../../chromium-server.js';

const CHROMIUM = '/usr/bin/chromium';
const KEY = 'k3y-S3CRET-0123456789abcdef';

// ---------------------------------------------------------------------------------------------------------------
// the fake service

interface Submission {
  mode: string;
  fields: Record<string, string>;
}
interface Task {
  mode: string;
  polls: number;
}

const submissions: Submission[] = [];
const polls: { mode: string; at: number; query: Record<string, string> }[] = [];
const tasks = new Map<string, Task>();
const hanging: ServerResponse[] = [];
let nextId = 1000;
let service: Server;
let svcBase = '';

const REQUIRED_KEY: Record<string, string> = { userrecaptcha: 'googlekey', hcaptcha: 'sitekey', turnstile: 'sitekey' };

function json(res: ServerResponse, body: unknown, status = 200): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function handleService(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  const [, mode = '', endpoint = ''] = url.pathname.split('/');
  if (endpoint === 'in.php') {
    if (req.method !== 'POST') return json(res, { status: 0, request: 'ERROR_METHOD_CALL' });
    const fields = Object.fromEntries(new URLSearchParams(await readBody(req)));
    submissions.push({ mode, fields });
    if (mode === 'hang-in') return void hanging.push(res);
    if (mode === 'http500') return json(res, { oops: true }, 500);
    if (mode === 'wrongkey') return json(res, { status: 0, request: 'ERROR_WRONG_USER_KEY' });
    if (mode === 'nokey') return json(res, { status: 0, request: 'ERROR_KEY_DOES_NOT_EXIST' });
    if (mode === 'zero') return json(res, { status: 0, request: 'ERROR_ZERO_BALANCE' });
    if (mode === 'echo')
      return json(res, {
        status: 0,
        request: `ERROR_WRONG_USER_KEY ${fields.key}`,
        error_text: `The key ${fields.key} is not valid, key=${encodeURIComponent(fields.key ?? '')}`,
      });
    // the checks a real service makes
    const keyField = REQUIRED_KEY[fields.method ?? ''];
    if (fields.key !== KEY) return json(res, { status: 0, request: 'ERROR_KEY_DOES_NOT_EXIST' });
    if (fields.json !== '1' || !keyField || !fields[keyField] || !/^https?:\/\//.test(fields.pageurl ?? '')) {
      return json(res, { status: 0, request: 'ERROR_BAD_PARAMETERS' });
    }
    const id = String(nextId++);
    tasks.set(id, { mode, polls: 0 });
    if (mode === 'text') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      return void res.end(`OK|${id}`);
    }
    return json(res, { status: 1, request: id });
  }
  if (endpoint === 'res.php') {
    const query = Object.fromEntries(url.searchParams);
    polls.push({ mode, at: Date.now(), query });
    if (query.key !== KEY) return json(res, { status: 0, request: 'ERROR_WRONG_USER_KEY' });
    if (query.action !== 'get' || query.json !== '1') return json(res, { status: 0, request: 'ERROR_BAD_PARAMETERS' });
    const task = tasks.get(query.id ?? '');
    if (!task) return json(res, { status: 0, request: 'ERROR_WRONG_CAPTCHA_ID' });
    task.polls++;
    if (mode === 'hang-res') return void hanging.push(res);
    if (mode === 'slow') return json(res, { status: 0, request: 'CAPCHA_NOT_READY' });
    if (mode === 'unsolvable') return json(res, { status: 0, request: 'ERROR_CAPTCHA_UNSOLVABLE' });
    if (task.polls <= 2) return json(res, { status: 0, request: 'CAPCHA_NOT_READY' });
    if (mode === 'text') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      return void res.end(`OK|TOKEN-${query.id}`);
    }
    return json(res, { status: 1, request: `TOKEN-${query.id}` });
  }
  json(res, { status: 0, request: 'ERROR_PAGE_NOT_FOUND' }, 404);
}

function listen(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<Server> {
  return new Promise((resolve) => {
    const s = createServer(handler);
    s.listen(0, '127.0.0.1', () => resolve(s));
  });
}

function close(s: Server | undefined): Promise<void> {
  if (!s) return Promise.resolve();
  s.closeAllConnections();
  return new Promise((resolve) => s.close(() => resolve()));
}

beforeAll(async () => {
  service = await listen((req, res) => {
    handleService(req, res).catch((e: unknown) => json(res, { status: 0, request: String(e) }, 500));
  });
  svcBase = `http://127.0.0.1:${(service.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const r of hanging) r.destroy();
  await close(service);
});

const V2: CaptchaFound = { kind: 'recaptcha_v2', sitekey: '6Lc-v2-sitekey', pageUrl: 'https://shop.example/login' };
const opts = (mode: string, extra: Partial<SolveOptions> = {}): SolveOptions => ({
  apiKey: KEY,
  baseUrl: `${svcBase}/${mode}`,
  pollMs: 40,
  timeoutMs: 5000,
  ...extra,
});

/** The rejection of `p`, checked to be an Error that does not carry the key anywhere. */
async function rejection(p: Promise<unknown>): Promise<Error> {
  const e = await p.then(
    (v) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(v)}`);
    },
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(Error);
  const err = e as Error;
  const all = `${err.name} ${err.message} ${err.stack ?? ''} ${String(err.cause ?? '')} ${JSON.stringify(err)}`;
  expect(all).not.toContain(KEY);
  expect(all).not.toContain(encodeURIComponent(KEY));
  expect(all).not.toContain(KEY.slice(0, 12));
  return err;
}

describe('solveCaptcha against a fake 2captcha-compatible service', () => {
  it('submits the right fields, polls through CAPCHA_NOT_READY and returns the token', async () => {
    const before = submissions.length;
    const started = Date.now();
    const token = await solveCaptcha(V2, opts('ok', { pollMs: 60 }));
    const elapsed = Date.now() - started;
    expect(token).toMatch(/^TOKEN-\d+$/);
    expect(token).not.toContain(KEY);
    const sub = submissions[before]!;
    expect(sub.fields).toEqual({ key: KEY, method: 'userrecaptcha', googlekey: V2.sitekey, pageurl: V2.pageUrl, json: '1' });
    const id = token.slice('TOKEN-'.length);
    const mine = polls.filter((p) => p.query.id === id);
    expect(mine).toHaveLength(3);
    for (const p of mine) expect(p.query).toEqual({ key: KEY, action: 'get', id, json: '1' });
    // the first poll comes one interval after the submission, then one per interval
    expect(mine[0]!.at - started).toBeGreaterThanOrEqual(55);
    expect(elapsed).toBeGreaterThanOrEqual(3 * 55);
  });

  it('sends the fields of each kind (v2 invisible, v3 with version and action, hCaptcha, Turnstile)', async () => {
    const cases: [CaptchaFound, Record<string, string>][] = [
      [
        { ...V2, invisible: true },
        { method: 'userrecaptcha', googlekey: V2.sitekey, invisible: '1' },
      ],
      [
        { kind: 'recaptcha_v3', sitekey: '6Lc-v3', pageUrl: 'https://a.example/', action: 'login' },
        { method: 'userrecaptcha', googlekey: '6Lc-v3', version: 'v3', action: 'login' },
      ],
      [
        { kind: 'recaptcha_v3', sitekey: '6Lc-v3', pageUrl: 'https://a.example/' },
        { method: 'userrecaptcha', googlekey: '6Lc-v3', version: 'v3', action: 'verify' },
      ],
      [
        { kind: 'hcaptcha', sitekey: 'hc-key', pageUrl: 'https://b.example/' },
        { method: 'hcaptcha', sitekey: 'hc-key' },
      ],
      [
        { kind: 'turnstile', sitekey: '0x4AAAAAAAtest', pageUrl: 'https://c.example/', action: 'signin' },
        { method: 'turnstile', sitekey: '0x4AAAAAAAtest', action: 'signin' },
      ],
    ];
    for (const [found, want] of cases) {
      const before = submissions.length;
      expect(await solveCaptcha(found, opts('ok', { pollMs: 10 }))).toMatch(/^TOKEN-/);
      expect(submissions[before]!.fields).toEqual({ key: KEY, json: '1', pageurl: found.pageUrl, ...want });
    }
  });

  it('accepts the plain-text answers (OK|...) of some compatible services, and a base URL with a trailing slash', async () => {
    expect(await solveCaptcha(V2, opts('text/', { pollMs: 10 }))).toMatch(/^TOKEN-\d+$/);
  });

  it('ERROR_WRONG_USER_KEY and ERROR_KEY_DOES_NOT_EXIST say to check captchaApiKey, without the key', async () => {
    const e1 = await rejection(solveCaptcha(V2, opts('wrongkey')));
    expect(e1.message).toContain('ERROR_WRONG_USER_KEY');
    expect(e1.message).toContain('check captchaApiKey');
    const e2 = await rejection(solveCaptcha(V2, opts('nokey')));
    expect(e2.message).toContain('ERROR_KEY_DOES_NOT_EXIST');
    expect(e2.message).toContain('check captchaApiKey');
  });

  it('a service that echoes the key in its error still yields a message without it', async () => {
    const e = await rejection(solveCaptcha(V2, opts('echo')));
    expect(e.message).toContain('ERROR_WRONG_USER_KEY');
    expect(e.message).toContain('***');
  });

  it('ERROR_ZERO_BALANCE says to top up', async () => {
    const e = await rejection(solveCaptcha(V2, opts('zero')));
    expect(e.message).toContain('ERROR_ZERO_BALANCE');
    expect(e.message).toMatch(/top up/i);
  });

  it('ERROR_CAPTCHA_UNSOLVABLE while polling suggests a fresh profile', async () => {
    const e = await rejection(solveCaptcha(V2, opts('unsolvable')));
    expect(e.message).toContain('ERROR_CAPTCHA_UNSOLVABLE');
    expect(e.message).toMatch(/fresh profile/);
  });

  it('an HTTP error and an unreachable service are reported without the key', async () => {
    const e1 = await rejection(solveCaptcha(V2, opts('http500')));
    expect(e1.message).toContain('HTTP 500');
    const dead = await listen(() => {});
    const port = (dead.address() as AddressInfo).port;
    await close(dead);
    const e2 = await rejection(solveCaptcha(V2, { apiKey: KEY, baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 3000 }));
    expect(e2.name).toBe('NetworkError');
    expect(e2.message).toMatch(/could not be reached/);
  });

  it('times out while polling NOT_READY and while the service hangs', async () => {
    let started = Date.now();
    const e1 = await rejection(solveCaptcha(V2, opts('slow', { pollMs: 30, timeoutMs: 300 })));
    expect(e1.name).toBe('TimeoutError');
    expect(e1.message).toMatch(/no answer within/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    expect(Date.now() - started).toBeLessThan(5000);

    started = Date.now();
    const e2 = await rejection(solveCaptcha(V2, opts('hang-in', { timeoutMs: 300 })));
    expect(e2.name).toBe('TimeoutError');
    expect(Date.now() - started).toBeLessThan(5000);

    started = Date.now();
    const e3 = await rejection(solveCaptcha(V2, opts('hang-res', { pollMs: 20, timeoutMs: 300 })));
    expect(e3.name).toBe('TimeoutError');
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('honours the AbortSignal promptly: before the start, during a hanging request, between polls', async () => {
    const pre = new AbortController();
    pre.abort();
    const before = submissions.length;
    expect((await rejection(solveCaptcha(V2, opts('ok', { signal: pre.signal })))).name).toBe('AbortError');
    expect(submissions.length).toBe(before);

    for (const [mode, pollMs] of [
      ['hang-in', 40],
      ['hang-res', 40],
      ['slow', 10_000],
    ] as const) {
      const ctl = new AbortController();
      const started = Date.now();
      setTimeout(() => ctl.abort(), 150);
      const e = await rejection(solveCaptcha(V2, opts(mode, { pollMs, timeoutMs: 60_000, signal: ctl.signal })));
      expect(e.name, mode).toBe('AbortError');
      // Without the signal the poll (10 s) or the 60 s timeout would end it; 5 s leaves room for a loaded machine.
      expect(Date.now() - started, mode).toBeLessThan(5000);
    }
  });

  it('validates its inputs', async () => {
    expect((await rejection(solveCaptcha(V2, { apiKey: KEY, baseUrl: 'ftp://127.0.0.1/' }))).message).toMatch(/http\(s\)/);
    expect((await rejection(solveCaptcha(V2, { apiKey: KEY, baseUrl: 'not a url' }))).message).toMatch(/not a URL/);
    expect((await rejection(solveCaptcha(V2, { apiKey: KEY, baseUrl: 'https://u:p@127.0.0.1/' }))).message).toMatch(
      /user name or password/,
    );
    expect((await rejection(solveCaptcha(V2, { apiKey: '', baseUrl: svcBase }))).message).toMatch(/captchaApiKey/);
    expect((await rejection(solveCaptcha({ ...V2, sitekey: '' }, opts('ok')))).message).toMatch(/site key/);
    expect((await rejection(solveCaptcha({ ...V2, kind: 'funcaptcha' as never }, opts('ok')))).message).toMatch(/Unknown CAPTCHA kind/);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// in a real page

const have = existsSync(CHROMIUM);
if (!have) console.warn(`captcha page tests skipped: ${CHROMIUM} is missing (apt-get install chromium)`);

const PAGES: Record<string, string> = {
  '/recaptcha': `<!doctype html><title>v2</title>
    <script>function onSolved(t) { window.solved = t; }</script>
    <form id="f" action="/done"><input name="user"><div class="g-recaptcha" data-sitekey="6Lc-v2-page" data-callback="onSolved"></div><button>Go</button></form>`,
  '/recaptcha-invisible': `<!doctype html><title>v2i</title>
    <form><div class="g-recaptcha" data-sitekey="6Lc-v2-inv" data-size="invisible"></div>
    <textarea name="g-recaptcha-response" id="a"></textarea></form>
    <form><textarea name="g-recaptcha-response" id="b"></textarea></form>`,
  '/recaptcha-frame': `<!doctype html><title>v2 frame</title>
    <div id="w"><iframe srcdoc="<p>x</p>" src="https://www.google.com/recaptcha/api2/anchor?ar=1&amp;k=6Lc-frame-key&amp;co=aHR0cA..&amp;size=normal"></iframe></div>`,
  '/recaptcha-v3': `<!doctype html><title>v3</title>
    <script src="/recaptcha/api.js?render=6Lc-v3-key"></script>
    <iframe srcdoc="" src="https://www.google.com/recaptcha/api2/anchor?ar=1&amp;k=6Lc-v3-key&amp;size=invisible"></iframe>
    <script>function send() { grecaptcha.ready(() => grecaptcha.execute('6Lc-v3-key', { action: 'submit_form' })); }</script>
    <form><input name="q"></form>`,
  '/recaptcha-explicit': `<!doctype html><title>explicit</title>
    <script src="/recaptcha/api.js?render=explicit"></script><p>no widget yet</p>`,
  '/recaptcha-cfg': `<!doctype html><title>cfg</title>
    <form><div id="box"></div></form>
    <script>window.___grecaptcha_cfg = { clients: { 0: { id: 0, aa: { bb: { sitekey: '6Lc-x', callback: function viaCfg(t) { window.cfgSolved = t; } } } } } };</script>`,
  '/hcaptcha': `<!doctype html><title>hc</title>
    <script>window.hc = { done(t) { window.hSolved = t; } };</script>
    <form><div class="h-captcha" data-sitekey="hc-page-key" data-callback="hc.done"></div></form>`,
  '/hcaptcha-frame': `<!doctype html><title>hc frame</title>
    <iframe srcdoc="" src="https://newassets.hcaptcha.com/captcha/v1/abc/static/hcaptcha.html#frame=checkbox&amp;id=0&amp;host=x&amp;sitekey=hc-frame-key"></iframe>`,
  '/turnstile': `<!doctype html><title>ts</title>
    <script>function tsDone(t) { window.tSolved = t; }</script>
    <form><div class="cf-turnstile" data-sitekey="0x4AAAAAAAts-page" data-action="login" data-cdata="sess-1" data-callback="tsDone"></div></form>`,
  '/turnstile-frame': `<!doctype html><title>ts frame</title>
    <iframe srcdoc="" src="https://challenges.cloudflare.com/cdn-cgi/challenge-platform/h/b/turnstile/if/ov2/av0/rcv0/0/ab12c/0x4AAAAAAAframe-key/auto/fbE/normal/auto/"></iframe>`,
  '/turnstile-named': `<!doctype html><title>ts named</title>
    <form><div class="cf-turnstile" data-sitekey="0x4AAAAAAAts-named" data-response-field-name="ts-token"></div></form>`,
  '/throwing-callback': `<!doctype html><title>throws</title>
    <script>function bad() { throw new Error('page bug'); }</script>
    <form><div class="g-recaptcha" data-sitekey="6Lc-throw" data-callback="bad"></div></form>`,
  '/plain': `<!doctype html><title>plain</title><h1>Nothing here</h1><div class="g-recaptcha"></div><iframe srcdoc="" src="https://example.com/frame"></iframe>`,
};

describe.skipIf(!have)('DETECT_CAPTCHA and INJECT_TOKEN in Chromium', () => {
  let web: Server;
  let origin = '';
  let browser: Browser;
  let page: Page;
  const external: string[] = [];

  /** Exactly as the plugin runs them: the source text of a function expression, called with one JSON argument. */
  const run = <T>(src: string, arg?: unknown): Promise<T> =>
    page.evaluate(`(${src}\n)(${arg === undefined ? '' : JSON.stringify(arg)})`) as Promise<T>;
  /** An expression evaluated in the page (a string: the tests compile without the DOM library). */
  const js = (expr: string): Promise<unknown> => page.evaluate(expr);
  const open = async (path: string): Promise<void> => {
    await page.goto(origin + path, { waitUntil: 'load' });
  };

  beforeAll(async () => {
    web = await listen((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path === '/recaptcha/api.js') {
        res.writeHead(200, { 'content-type': 'text/javascript' });
        return void res.end('/* stand-in: no real reCAPTCHA */');
      }
      const html = PAGES[path];
      res.writeHead(html ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
      res.end(html ?? 'not found');
    });
    origin = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
    // The run's shared Chromium (a context of this file's own), or one launched here without it.
    browser =
      (await connectSharedChromium()) ??
      (await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] }));
    const context = await browser.newContext();
    await context.route('**/*', (route) => {
      const u = route.request().url();
      if (u.startsWith(origin + '/') || u.startsWith('about:') || u.startsWith('data:')) return route.continue();
      external.push(u);
      return route.abort();
    });
    page = await context.newPage();
  });

  afterAll(async () => {
    await browser?.close();
    await close(web);
  });

  it('detects reCAPTCHA v2 from its div, with the page URL', async () => {
    await open('/recaptcha');
    expect(await run(DETECT_CAPTCHA)).toEqual({ kind: 'recaptcha_v2', sitekey: '6Lc-v2-page', pageUrl: `${origin}/recaptcha` });
    await open('/recaptcha-invisible');
    expect(await run(DETECT_CAPTCHA)).toEqual({
      kind: 'recaptcha_v2',
      sitekey: '6Lc-v2-inv',
      pageUrl: `${origin}/recaptcha-invisible`,
      invisible: true,
    });
  });

  it('detects reCAPTCHA v2 from its iframe (k=), and v3 from api.js?render= (its badge frame is not a v2 widget)', async () => {
    await open('/recaptcha-frame');
    expect(await run(DETECT_CAPTCHA)).toEqual({ kind: 'recaptcha_v2', sitekey: '6Lc-frame-key', pageUrl: `${origin}/recaptcha-frame` });
    await open('/recaptcha-v3');
    expect(await run(DETECT_CAPTCHA)).toEqual({
      kind: 'recaptcha_v3',
      sitekey: '6Lc-v3-key',
      pageUrl: `${origin}/recaptcha-v3`,
      action: 'submit_form',
    });
    await open('/recaptcha-explicit');
    expect(await run(DETECT_CAPTCHA)).toBeNull();
  });

  it('detects hCaptcha (div, iframe sitekey=) and Turnstile (div with action and cdata, challenge iframe)', async () => {
    await open('/hcaptcha');
    expect(await run(DETECT_CAPTCHA)).toEqual({ kind: 'hcaptcha', sitekey: 'hc-page-key', pageUrl: `${origin}/hcaptcha` });
    await open('/hcaptcha-frame');
    expect(await run(DETECT_CAPTCHA)).toEqual({ kind: 'hcaptcha', sitekey: 'hc-frame-key', pageUrl: `${origin}/hcaptcha-frame` });
    await open('/turnstile');
    expect(await run(DETECT_CAPTCHA)).toEqual({
      kind: 'turnstile',
      sitekey: '0x4AAAAAAAts-page',
      pageUrl: `${origin}/turnstile`,
      action: 'login',
      data: 'sess-1',
    });
    await open('/turnstile-frame');
    expect(await run(DETECT_CAPTCHA)).toEqual({ kind: 'turnstile', sitekey: '0x4AAAAAAAframe-key', pageUrl: `${origin}/turnstile-frame` });
  });

  it('returns null on a page without a CAPTCHA', async () => {
    await open('/plain');
    expect(await run(DETECT_CAPTCHA)).toBeNull();
  });

  it('fills existing reCAPTCHA fields (every one) and reports no callback when there is none', async () => {
    await open('/recaptcha-invisible');
    const r = await run<InjectResult>(INJECT_TOKEN, { kind: 'recaptcha_v2', token: 'tok-inv' });
    expect(r).toEqual({ filled: 2, callback: null });
    expect(await js(`[...document.querySelectorAll('textarea')].map((t) => t.value)`)).toEqual(['tok-inv', 'tok-inv']);
  });

  it('hCaptcha: creates h-captcha-response and g-recaptcha-response in the widget and calls a dotted data-callback', async () => {
    await open('/hcaptcha');
    const r = await run<InjectResult>(INJECT_TOKEN, { kind: 'hcaptcha', token: 'tok-hc' });
    expect(r).toEqual({ filled: 2, callback: 'hc.done' });
    expect(
      await js(`({
      solved: window.hSolved,
      h: document.querySelector('.h-captcha textarea[name="h-captcha-response"]')?.value,
      g: document.querySelector('.h-captcha textarea[name="g-recaptcha-response"]')?.value,
    })`),
    ).toEqual({ solved: 'tok-hc', h: 'tok-hc', g: 'tok-hc' });
  });

  it('Turnstile: fills cf-turnstile-response (or the field the widget names) and calls data-callback', async () => {
    await open('/turnstile');
    expect(await run<InjectResult>(INJECT_TOKEN, { kind: 'turnstile', token: 'tok-ts' })).toEqual({ filled: 1, callback: 'tsDone' });
    expect(
      await js(`({
      solved: window.tSolved,
      v: document.querySelector('form input[name="cf-turnstile-response"]')?.value,
      form: new FormData(document.querySelector('form')).get('cf-turnstile-response'),
    })`),
    ).toEqual({ solved: 'tok-ts', v: 'tok-ts', form: 'tok-ts' });

    await open('/turnstile-named');
    expect(await run<InjectResult>(INJECT_TOKEN, { kind: 'turnstile', token: 'tok-named' })).toEqual({ filled: 1, callback: null });
    expect(await js(`new FormData(document.querySelector('form')).get('ts-token')`)).toBe('tok-named');
  });

  it('reCAPTCHA rendered by script: the callback kept in ___grecaptcha_cfg; a throwing callback is reported', async () => {
    await open('/recaptcha-cfg');
    expect(await run<InjectResult>(INJECT_TOKEN, { kind: 'recaptcha_v2', token: 'tok-cfg' })).toEqual({ filled: 1, callback: 'viaCfg' });
    expect(
      await js(`({ solved: window.cfgSolved, form: new FormData(document.querySelector('form')).get('g-recaptcha-response') })`),
    ).toEqual({ solved: 'tok-cfg', form: 'tok-cfg' });

    await open('/throwing-callback');
    expect(await run<InjectResult>(INJECT_TOKEN, { kind: 'recaptcha_v2', token: 't' })).toEqual({
      filled: 1,
      callback: 'bad',
      callbackError: 'page bug',
    });
  });

  it('full flow: detect → solve with the fake service → inject; the page callback and the form get the token', async () => {
    await open('/recaptcha');
    const found = await run<CaptchaFound | null>(DETECT_CAPTCHA);
    expect(found).not.toBeNull();
    const before = submissions.length;
    const token = await solveCaptcha(found!, opts('ok', { pollMs: 30 }));
    expect(submissions[before]!.fields).toMatchObject({
      method: 'userrecaptcha',
      googlekey: '6Lc-v2-page',
      pageurl: `${origin}/recaptcha`,
    });
    const r = await run<InjectResult>(INJECT_TOKEN, { kind: found!.kind, token });
    expect(r).toEqual({ filled: 1, callback: 'onSolved' });
    const state = await js(`({
      solved: window.solved,
      inForm: document.querySelector('#f textarea[name="g-recaptcha-response"]')?.value,
      submitted: new FormData(document.querySelector('#f')).get('g-recaptcha-response'),
    })`);
    expect(state).toEqual({ solved: token, inForm: token, submitted: token });
  });

  it('never left 127.0.0.1', () => {
    expect(external).toEqual([]);
  });
});
