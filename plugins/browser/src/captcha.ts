/**
 * CAPTCHA solving for browser_solve_captcha, engine-neutral: two in-page scripts (sources of function expressions,
 * run with driver.evaluate) and the client of a 2captcha-compatible HTTP API.
 *
 * - DETECT_CAPTCHA finds a reCAPTCHA v2/v3, hCaptcha or Cloudflare Turnstile on the page from its markup alone
 *   (widget containers, their iframes, the reCAPTCHA v3 script) and returns what the service needs.
 * - solveCaptcha submits it (`in.php`) and polls for the answer (`res.php`).
 * - INJECT_TOKEN puts the answer where the page reads it (response fields, the widget's callback).
 *
 * The API key is sent to the service (a form field of in.php, a query parameter of res.php, as the API requires) and
 * nowhere else: every message this module builds goes through a redaction of the key.
 */

export type CaptchaKind = 'recaptcha_v2' | 'recaptcha_v3' | 'hcaptcha' | 'turnstile';

/** What DETECT_CAPTCHA returns for the first CAPTCHA of the page. */
export interface CaptchaFound {
  kind: CaptchaKind;
  sitekey: string;
  /** The page's URL (location.href). */
  pageUrl: string;
  /** reCAPTCHA v3 / Turnstile action, when the page shows it. */
  action?: string;
  /** An invisible reCAPTCHA v2 or hCaptcha widget. */
  invisible?: boolean;
  /** reCAPTCHA Enterprise (enterprise.js or /recaptcha/enterprise/ frames). */
  enterprise?: boolean;
  /** Turnstile `data-cdata`. */
  data?: string;
}

export interface SolveOptions {
  /** Key of the service account; never appears in a message, an error or a result. */
  apiKey: string;
  /** Base URL of the service, http(s), e.g. https://2captcha.com (in.php and res.php are under it). */
  baseUrl: string;
  /** Aborts the solving (rejects promptly with an Error named AbortError). */
  signal?: AbortSignal;
  /** Interval between res.php polls, ms (default 5000; the first poll comes after one interval). */
  pollMs?: number;
  /** Overall limit, ms (default 120000). */
  timeoutMs?: number;
  /** For tests and proxies (default: the global fetch). */
  fetchImpl?: typeof fetch;
}

/** Argument of INJECT_TOKEN. */
export interface InjectArgs {
  kind: CaptchaKind;
  token: string;
}

/** Result of INJECT_TOKEN. */
export interface InjectResult {
  /** Response fields that now hold the token (created ones included). */
  filled: number;
  /** Name of the page callback that was called with the token, or null. */
  callback: string | null;
  /** The callback's exception, when it threw. */
  callbackError?: string;
}

export const DEFAULT_POLL_MS = 5000;
export const DEFAULT_TIMEOUT_MS = 120_000;

/**
 * Source of the in-page function `() => CaptchaFound | null`. Order: widget containers (reCAPTCHA v2, hCaptcha,
 * Turnstile), then their iframes (a reCAPTCHA frame of the v3 key is the v3 badge, not a v2 widget), then the
 * reCAPTCHA v3 script (`api.js?render=<key>`).
 */
export const DETECT_CAPTCHA = String.raw`() => {
  const pageUrl = location.href;
  const attr = (el, name) => {
    const v = el.getAttribute(name);
    return v && v.trim() ? v.trim() : undefined;
  };
  const parse = (src) => {
    try { return new URL(src, location.href); } catch { return null; }
  };
  // parameters of the query and of the fragment (hCaptcha puts them after '#')
  const param = (u, name) => {
    const q = u.searchParams.get(name);
    if (q) return q;
    try { return new URLSearchParams(u.hash.replace(/^#/, '')).get(name) || undefined; } catch { return undefined; }
  };
  const clean = (o) => {
    for (const k of Object.keys(o)) if (o[k] === undefined || o[k] === false) delete o[k];
    return o;
  };
  const isRecaptchaFrame = (u) => /(^|\.)(google\.com|recaptcha\.net|gstatic\.com)$/.test(u.hostname) && /\/recaptcha\//.test(u.pathname);
  const isHcaptchaFrame = (u) => /(^|\.)hcaptcha\.com$/.test(u.hostname);
  const isTurnstileFrame = (u) => u.hostname === 'challenges.cloudflare.com';
  const frames = [...document.querySelectorAll('iframe[src]')].map((f) => parse(f.getAttribute('src'))).filter(Boolean);
  const scripts = [...document.querySelectorAll('script[src]')].map((s) => parse(s.getAttribute('src'))).filter(Boolean);
  const recaptchaScripts = scripts.filter((u) => /\/recaptcha\/(api|enterprise)\.js$/.test(u.pathname));
  const enterprise = recaptchaScripts.some((u) => /enterprise\.js$/.test(u.pathname)) || frames.some((u) => isRecaptchaFrame(u) && /\/recaptcha\/enterprise\//.test(u.pathname));
  let v3key;
  for (const u of recaptchaScripts) {
    const r = u.searchParams.get('render');
    if (r && r !== 'explicit' && r !== 'onload') { v3key = r; break; }
  }

  // 1. widget containers
  const rc = document.querySelector('.g-recaptcha[data-sitekey]');
  if (rc && !rc.classList.contains('h-captcha')) {
    const sitekey = attr(rc, 'data-sitekey');
    if (sitekey) return clean({ kind: 'recaptcha_v2', sitekey, pageUrl, invisible: attr(rc, 'data-size') === 'invisible', enterprise });
  }
  const hc = document.querySelector('.h-captcha[data-sitekey]');
  if (hc) {
    const sitekey = attr(hc, 'data-sitekey');
    if (sitekey) return clean({ kind: 'hcaptcha', sitekey, pageUrl, invisible: attr(hc, 'data-size') === 'invisible' });
  }
  const ts = document.querySelector('.cf-turnstile[data-sitekey]');
  if (ts) {
    const sitekey = attr(ts, 'data-sitekey');
    if (sitekey) return clean({ kind: 'turnstile', sitekey, pageUrl, action: attr(ts, 'data-action'), data: attr(ts, 'data-cdata') });
  }

  // 2. iframes of widgets rendered by script
  for (const u of frames) {
    if (!isRecaptchaFrame(u)) continue;
    const k = u.searchParams.get('k');
    if (!k || k === v3key) continue;
    return clean({ kind: 'recaptcha_v2', sitekey: k, pageUrl, invisible: u.searchParams.get('size') === 'invisible', enterprise });
  }
  for (const u of frames) {
    if (!isHcaptchaFrame(u)) continue;
    const k = param(u, 'sitekey');
    if (k) return clean({ kind: 'hcaptcha', sitekey: k, pageUrl, invisible: param(u, 'size') === 'invisible' });
  }
  for (const u of frames) {
    if (!isTurnstileFrame(u)) continue;
    const m = /\/(0x[0-9A-Za-z_-]{10,})(\/|$)/.exec(u.pathname);
    if (m) return { kind: 'turnstile', sitekey: m[1], pageUrl };
  }

  // 3. reCAPTCHA v3: the key of api.js?render=; the action when an inline script names it
  if (v3key) {
    let action;
    for (const s of document.querySelectorAll('script:not([src])')) {
      const m = /execute\([^)]*?action\s*:\s*['"]([\w/.-]{1,100})['"]/.exec(s.textContent || '');
      if (m) { action = m[1]; break; }
    }
    return clean({ kind: 'recaptcha_v3', sitekey: v3key, pageUrl, action, enterprise });
  }
  return null;
}`;

/**
 * Source of the in-page function `({kind, token}) => InjectResult`: sets every response field of the kind (creating
 * one inside the widget, or the first form, when the page has none), fires input/change events, then calls the
 * widget's `data-callback` (a global function, dotted paths allowed) or, for reCAPTCHA rendered by script, the
 * callback registered in `___grecaptcha_cfg`.
 */
export const INJECT_TOKEN = String.raw`({ kind, token }) => {
  const recaptcha = kind === 'recaptcha_v2' || kind === 'recaptcha_v3';
  const widgetSel = recaptcha ? '.g-recaptcha' : kind === 'hcaptcha' ? '.h-captcha' : '.cf-turnstile';
  const widgets = [...document.querySelectorAll(widgetSel)];
  const home = widgets[0] || document.querySelector('form');
  let filled = 0;
  const setValue = (el) => {
    const proto = el instanceof HTMLTextAreaElement ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
    const desc = Object.getOwnPropertyDescriptor(proto, 'value');
    if (desc && desc.set) desc.set.call(el, token); else el.value = token;
    if (el instanceof HTMLTextAreaElement) el.textContent = token;
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
    filled++;
  };
  const fill = (name, tag, create) => {
    const found = [...document.querySelectorAll('[name="' + name + '"]')];
    if (found.length === 0 && create && home) {
      const el = document.createElement(tag);
      el.name = name;
      if (tag === 'input') el.type = 'hidden'; else { el.id = name; el.style.display = 'none'; }
      home.appendChild(el);
      found.push(el);
    }
    for (const el of found) if ('value' in el) setValue(el);
  };
  if (recaptcha) {
    fill('g-recaptcha-response', 'textarea', true);
  } else if (kind === 'hcaptcha') {
    fill('h-captcha-response', 'textarea', true);
    fill('g-recaptcha-response', 'textarea', true);
  } else if (kind === 'turnstile') {
    // a widget may name its field (data-response-field-name); the default field is filled wherever it exists
    const custom = new Set(widgets.map((w) => w.getAttribute('data-response-field-name')).filter(Boolean));
    for (const n of custom) fill(n, 'input', true);
    if (!custom.has('cf-turnstile-response')) fill('cf-turnstile-response', 'input', custom.size === 0);
  }

  const resolve = (path) => {
    let obj = window;
    for (const part of path.split('.')) {
      if (obj == null) return undefined;
      obj = obj[part];
    }
    return obj;
  };
  let callback = null;
  let callbackError;
  const call = (fn, name) => {
    callback = name;
    try { fn(token); } catch (e) { callbackError = String(e && e.message ? e.message : e).slice(0, 200); }
  };
  for (const w of widgets) {
    const name = w.getAttribute('data-callback');
    if (!name) continue;
    const fn = resolve(name.trim());
    if (typeof fn === 'function') { call(fn, name.trim()); break; }
  }
  if (!callback && recaptcha && window.___grecaptcha_cfg && window.___grecaptcha_cfg.clients) {
    // grecaptcha.render(el, { callback }) keeps the callback (a function or a global name) in its client objects
    const seen = new Set();
    const search = (o, depth) => {
      if (!o || typeof o !== 'object' || depth > 4 || seen.has(o) || o instanceof Node) return null;
      seen.add(o);
      for (const k of Object.keys(o)) {
        let v;
        try { v = o[k]; } catch { continue; }
        if (k === 'callback') {
          if (typeof v === 'function') return { fn: v, name: v.name || 'the reCAPTCHA callback' };
          if (typeof v === 'string' && typeof resolve(v) === 'function') return { fn: resolve(v), name: v };
        }
        const r = search(v, depth + 1);
        if (r) return r;
      }
      return null;
    };
    for (const c of Object.values(window.___grecaptcha_cfg.clients)) {
      const r = search(c, 0);
      if (r) { call(r.fn, r.name); break; }
    }
  }
  const out = { filled, callback };
  if (callbackError) out.callbackError = callbackError;
  return out;
}`;

const KINDS: ReadonlySet<string> = new Set(['recaptcha_v2', 'recaptcha_v3', 'hcaptcha', 'turnstile']);

/** What the service's error codes mean and what to do about them. */
const ADVICE: Record<string, string> = {
  ERROR_WRONG_USER_KEY: 'the service rejected the API key: check captchaApiKey',
  ERROR_KEY_DOES_NOT_EXIST: 'the service does not know the API key: check captchaApiKey',
  ERROR_ZERO_BALANCE: 'the service account has no balance left: top up the account of the CAPTCHA service',
  ERROR_CAPTCHA_UNSOLVABLE: 'the service could not solve this CAPTCHA: try again with a fresh profile (new cookies), or later',
  ERROR_NO_SLOT_AVAILABLE: 'the service is busy: try again in a few seconds',
  ERROR_GOOGLEKEY: 'the service rejected the site key found on the page: the page may use a widget the detector misread',
  ERROR_WRONG_GOOGLEKEY: 'the service rejected the site key found on the page: the page may use a widget the detector misread',
  ERROR_SITEKEY: 'the service rejected the site key found on the page: the page may use a widget the detector misread',
  ERROR_PAGEURL: 'the service rejected the page URL',
  ERROR_IP_NOT_ALLOWED: "the service does not accept requests from this IP address: check the account's allowed IPs",
  IP_BANNED: 'the service has banned this IP address for too many bad requests: wait, then check captchaApiKey',
  ERROR_IP_BANNED: 'the service has banned this IP address for too many bad requests: wait, then check captchaApiKey',
  ERROR_WRONG_CAPTCHA_ID: 'the service lost the task: try again',
  ERROR_EMPTY_ACTION: 'the service rejected the request: try again',
  ERROR_BAD_DUPLICATES: "the service's workers disagreed on the answer: try again",
  ERROR_METHOD_CALL: 'the service rejected the request: check captchaBaseUrl',
  ERROR_BAD_PARAMETERS: 'the service rejected the request parameters',
  MAX_USER_TURN: 'too many requests to the service: wait a few seconds, then try again',
};

class CaptchaError extends Error {
  constructor(message: string, name = 'CaptchaError') {
    super(message);
    this.name = name;
  }
}

/**
 * Submits a CAPTCHA found by DETECT_CAPTCHA to a 2captcha-compatible service and waits for its answer (the token to
 * give INJECT_TOKEN). Rejects with an Error naming the service's code and what to do; never with the key in it.
 */
export async function solveCaptcha(found: CaptchaFound, opts: SolveOptions): Promise<string> {
  const apiKey = String(opts.apiKey ?? '');
  const redact = (s: string): string => redactKey(s, apiKey);
  const fail = (msg: string, name?: string): CaptchaError => new CaptchaError(redact(msg), name);
  if (!apiKey.trim()) throw fail('No captchaApiKey is set: configure the key of a 2captcha-compatible service.');

  let base: URL;
  try {
    base = new URL(String(opts.baseUrl ?? ''));
  } catch {
    throw fail('captchaBaseUrl is not a URL: set it to the http(s) base URL of a 2captcha-compatible service, e.g. https://2captcha.com.');
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw fail(`captchaBaseUrl must be http(s), not ${base.protocol}: set it to the base URL of a 2captcha-compatible service.`);
  }
  if (base.username || base.password)
    throw fail('captchaBaseUrl must not carry a user name or password: the service is authenticated by captchaApiKey.');
  base.hash = '';
  base.search = '';
  const root = base.href.replace(/\/+$/, '');
  // the service as messages name it: no credentials, no path details
  const where = `${base.protocol}//${base.host}`;

  if (!found || typeof found !== 'object' || !KINDS.has(found.kind))
    throw fail(`Unknown CAPTCHA kind: ${String(found?.kind).slice(0, 40)}.`);
  if (typeof found.sitekey !== 'string' || !found.sitekey.trim()) throw fail('The CAPTCHA has no site key.');
  if (typeof found.pageUrl !== 'string' || !found.pageUrl) throw fail('The CAPTCHA has no page URL.');

  const pollMs = positive(opts.pollMs, DEFAULT_POLL_MS);
  const timeoutMs = positive(opts.timeoutMs, DEFAULT_TIMEOUT_MS);
  const doFetch = opts.fetchImpl ?? globalThis.fetch;
  const userSignal = opts.signal;
  const deadline = Date.now() + timeoutMs;
  const timedOut = (): CaptchaError =>
    fail(
      `The CAPTCHA service (${where}) gave no answer within ${timeoutMs >= 1000 ? `${Math.round(timeoutMs / 1000)} s` : `${timeoutMs} ms`}: try again later, or with a fresh profile.`,
      'TimeoutError',
    );
  const aborted = (): CaptchaError => fail('CAPTCHA solving was aborted.', 'AbortError');
  const check = (): void => {
    if (userSignal?.aborted) throw aborted();
    if (Date.now() >= deadline) throw timedOut();
  };

  /** One request bounded by the deadline and the caller's signal; the parsed answer `{status, request, error_text?}`. */
  const request = async (url: string, init: RequestInit, what: string): Promise<ServiceAnswer> => {
    check();
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), Math.max(1, deadline - Date.now()));
    const onAbort = (): void => ctl.abort();
    userSignal?.addEventListener('abort', onAbort, { once: true });
    try {
      const res = await doFetch(url, { ...init, signal: ctl.signal, redirect: 'follow' });
      const text = await res.text();
      if (!res.ok)
        throw fail(`The CAPTCHA service (${where}) answered ${what} with HTTP ${res.status}: check captchaBaseUrl, or try again later.`);
      return parseAnswer(text);
    } catch (e) {
      if (userSignal?.aborted) throw aborted();
      if (Date.now() >= deadline || ctl.signal.aborted) throw timedOut();
      if (e instanceof CaptchaError) throw e;
      const cause = e instanceof Error ? ((e.cause as { code?: string } | undefined)?.code ?? e.message) : String(e);
      throw fail(
        `The CAPTCHA service (${where}) could not be reached (${redact(String(cause)).slice(0, 120)}): check captchaBaseUrl and the network.`,
        'NetworkError',
      );
    } finally {
      clearTimeout(timer);
      userSignal?.removeEventListener('abort', onAbort);
    }
  };

  const serviceError = (answer: ServiceAnswer, stage: string): CaptchaError => {
    // redacted before anything is cut, so no part of the key can survive a truncation
    const code =
      redact(String(answer.request ?? 'no answer'))
        .replace(/[^\w.-]/g, '')
        .slice(0, 60) || 'unknown error';
    const advice = ADVICE[code] ?? "see the service's documentation of this code";
    const detail = answer.error_text ? ` (${redact(String(answer.error_text)).replace(/\s+/g, ' ').slice(0, 160)})` : '';
    return fail(`The CAPTCHA service refused ${stage}: ${code}${detail}: ${advice}.`);
  };

  // submit
  const form = new URLSearchParams();
  form.set('key', apiKey);
  form.set('json', '1');
  form.set('pageurl', found.pageUrl);
  if (found.kind === 'recaptcha_v2' || found.kind === 'recaptcha_v3') {
    form.set('method', 'userrecaptcha');
    form.set('googlekey', found.sitekey);
    if (found.kind === 'recaptcha_v3') {
      form.set('version', 'v3');
      form.set('action', found.action || 'verify');
    } else if (found.invisible) form.set('invisible', '1');
    if (found.enterprise) form.set('enterprise', '1');
  } else if (found.kind === 'hcaptcha') {
    form.set('method', 'hcaptcha');
    form.set('sitekey', found.sitekey);
    if (found.invisible) form.set('invisible', '1');
  } else {
    form.set('method', 'turnstile');
    form.set('sitekey', found.sitekey);
    if (found.action) form.set('action', found.action);
    if (found.data) form.set('data', found.data);
  }
  const submitted = await request(
    `${root}/in.php`,
    {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    },
    'the submission',
  );
  if (submitted.status !== 1 || !submitted.request) throw serviceError(submitted, 'the CAPTCHA');
  const id = String(submitted.request);

  // poll
  const resUrl = `${root}/res.php?${new URLSearchParams({ key: apiKey, action: 'get', id, json: '1' }).toString()}`;
  let transient = 0;
  for (;;) {
    await sleep(Math.min(pollMs, Math.max(0, deadline - Date.now())), userSignal);
    check();
    let answer: ServiceAnswer;
    try {
      answer = await request(resUrl, { method: 'GET' }, 'the poll');
    } catch (e) {
      // a failed poll is retried a few times: the task lives on at the service
      if (e instanceof CaptchaError && e.name === 'NetworkError' && ++transient < 3) continue;
      throw e;
    }
    transient = 0;
    if (answer.status === 1 && answer.request) return String(answer.request);
    const code = String(answer.request ?? '');
    if (code === 'CAPCHA_NOT_READY' || code === 'CAPTCHA_NOT_READY') continue;
    throw serviceError(answer, 'to answer');
  }
}

interface ServiceAnswer {
  status: number;
  request?: string;
  error_text?: string;
}

/** The JSON answer of in.php / res.php; also the plain-text form (`OK|<value>` or an error code) some clones send. */
function parseAnswer(text: string): ServiceAnswer {
  const t = text.trim();
  try {
    const j = JSON.parse(t) as { status?: unknown; request?: unknown; error_text?: unknown };
    if (j && typeof j === 'object') {
      const out: ServiceAnswer = { status: Number(j.status) === 1 ? 1 : 0, ...(j.request == null ? {} : { request: String(j.request) }) };
      if (j.error_text) out.error_text = String(j.error_text);
      return out;
    }
  } catch {
    // not JSON
  }
  if (t.startsWith('OK|')) return { status: 1, request: t.slice(3) };
  return { status: 0, request: t || 'an empty answer' };
}

/** Replaces the key (raw and URL-encoded) in a message. */
export function redactKey(s: string, key: string): string {
  if (!key) return s;
  let out = s;
  for (const form of new Set([key, encodeURIComponent(key), new URLSearchParams({ k: key }).toString().slice(2)])) {
    if (form) out = out.split(form).join('***');
  }
  return out;
}

function positive(v: number | undefined, dflt: number): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : dflt;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted || ms <= 0) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
