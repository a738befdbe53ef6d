/**
 * engineA: the browser driver on playwright-core, driving the system Chromium (never a downloaded one).
 *
 * With a profile folder the browser runs as a persistent context (`chromium.launchPersistentContext`), without one
 * as a plain browser plus one context. The driver works on a single page: the first page of the context.
 *
 * `raw()` returns `{ page, browser }` where `browser` is the playwright `Browser` when there is no profile folder,
 * and the persistent `BrowserContext` with a profile folder (that context is the profile: it owns the pages and
 * the cookies and closing it closes the browser; its `browser()` gives the `Browser`).
 *
 * Requests are decided by `filter` on a browser-level CDP session (Fetch domain): it sees every request of every
 * page, popup, frame and worker, redirects included (a page-level `context.route` does not see redirects: playwright
 * continues them itself). Service workers are blocked (`serviceWorkers: 'block'`). WebSocket handshakes are not
 * interceptable over CDP and do not reach the filter.
 *
 * Viewport changes that playwright cannot apply to a live context (mobile flag, touch, user agent, scale factor)
 * recreate the context: a persistent profile is closed and relaunched on the same folder, a plain context is
 * replaced by a new one of the same browser; the current URL is opened again (the history is lost).
 */
import { errorsFor } from '../../../../sdk/errors.js';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  chromium,
  type Browser,
  type BrowserContext,
  type BrowserContextOptions,
  type CDPSession,
  type LaunchOptions as PlaywrightLaunchOptions,
  type FrameLocator,
  type Page,
  type Request,
  type Response,
} from 'playwright-core';
import { stat } from 'node:fs/promises';
import {
  BASE_ARGS,
  downloadPath,
  type BrowserDriver,
  type LaunchOptions,
  type NavigationResult,
  type Target,
  type Viewport,
} from '../driver.js';
import { refSelector } from '../refs.js';
import {
  FOCUS_END,
  guardRequests,
  safely,
  settleAfterFailedNavigation,
  splitKey,
  XHR_TYPES,
  type FetchSession,
  type PageElement,
} from './shared.js';
import { errorMessage } from '../../../../sdk/errors.js';

const coded = errorsFor('browser');

/** The index of the option labelled `label` in a <select> (-1 when none). */
const FIND_OPTION = (el: PageElement, label: string): number => {
  // keel-plain-error: runs in the browser page (serialised by page.evaluate), where the SDK cannot be imported.
  if (el.tagName !== 'SELECT' || !el.options) throw new Error(`not a <select> element but <${el.tagName.toLowerCase()}>`);
  const norm = (s: string) => s.replace(/\s+/g, ' ').trim();
  const want = norm(label);
  const options = Array.from(el.options);
  let i = options.findIndex((o) => norm(o.label) === want || norm(o.textContent ?? '') === want);
  if (i < 0) i = options.findIndex((o) => norm(o.label).toLowerCase() === want.toLowerCase());
  return i;
};

function contextOptions(v: Viewport): BrowserContextOptions {
  return {
    viewport: { width: v.width, height: v.height },
    deviceScaleFactor: v.deviceScaleFactor,
    isMobile: v.isMobile,
    hasTouch: v.hasTouch,
    ...(v.userAgent ? { userAgent: v.userAgent } : {}),
    serviceWorkers: 'block',
    acceptDownloads: true,
  };
}

/** Whether two viewports differ only in size (which a live page can take). */
function sameEmulation(a: Viewport, b: Viewport): boolean {
  return (
    a.deviceScaleFactor === b.deviceScaleFactor && a.isMobile === b.isMobile && a.hasTouch === b.hasTouch && a.userAgent === b.userAgent
  );
}

export async function launchPlaywright(opts: LaunchOptions): Promise<BrowserDriver> {
  const executablePath = opts.executablePath;
  if (!executablePath) {
    throw coded(
      'KEEL_E_NOT_CONFIGURED',
      'engineA needs a Chromium executable: set browserExecutablePath (Keel never downloads a browser).',
    );
  }
  const isRoot = process.getuid?.() === 0;
  const args = [...new Set([...BASE_ARGS, ...(opts.args ?? []), ...(isRoot ? ['--no-sandbox'] : [])])];
  const launchOptions: PlaywrightLaunchOptions = {
    executablePath,
    headless: opts.headless,
    args,
    // playwright turns the sandbox off by default; keep it on unless running as root (where Chromium refuses it)
    chromiumSandbox: !isRoot,
    // no "controlled by automated software" flag (and navigator.webdriver stays false)
    ignoreDefaultArgs: ['--enable-automation'],
    // Keel shuts the browser down itself; playwright's handlers would exit the process on a signal
    handleSIGINT: false,
    handleSIGTERM: false,
    handleSIGHUP: false,
    timeout: Math.max(30_000, opts.timeoutMs),
    ...(opts.env ? { env: { ...process.env, ...opts.env } } : {}),
  };
  const profileDir = opts.profileDir;
  if (profileDir) await mkdir(profileDir, { recursive: true, mode: 0o700 });

  let browser: Browser | undefined;
  let context!: BrowserContext;
  let page!: Page;
  let viewport = opts.viewport;
  let alive = true;
  let swapping = false;
  let closing: Promise<void> | undefined;
  let downloads = 0;
  const reported = new WeakSet<Request>();
  const effect = (e: Parameters<NonNullable<LaunchOptions['onEffect']>>[0]) => safely(() => opts.onEffect?.(e));

  const reportXhr = (req: Request, status: number | undefined) => {
    if (!opts.onXhr || reported.has(req) || !XHR_TYPES.has(req.resourceType())) return;
    reported.add(req);
    const r = { method: req.method(), url: req.url(), resourceType: req.resourceType(), ...(status !== undefined ? { status } : {}) };
    safely(() => opts.onXhr!(r));
  };

  const setupContext = async (ctx: BrowserContext) => {
    ctx.setDefaultTimeout(opts.timeoutMs);
    ctx.setDefaultNavigationTimeout(opts.timeoutMs);
    ctx.on('close', () => {
      if (ctx === context && !swapping) alive = false;
    });
    if (opts.initScript) await ctx.addInitScript(opts.initScript);
  };

  const setupPage = (p: Page) => {
    if (opts.onConsole) {
      const onConsole = opts.onConsole;
      p.on('console', (m) => {
        const url = m.location().url;
        safely(() => onConsole({ type: m.type(), text: m.text(), ...(url ? { url } : {}) }));
      });
      p.on('pageerror', (e) => {
        const url = p.url();
        safely(() => onConsole({ type: 'error', text: errorMessage(e), ...(url ? { url } : {}) }));
      });
    }
    if (opts.onXhr) {
      p.on('response', (res: Response) => reportXhr(res.request(), res.status()));
      p.on('requestfailed', (req) => reportXhr(req, undefined));
    }
    p.on('close', () => {
      if (p !== page || swapping) return;
      // an adopted popup that closed hands back to the page that is left; the last page closing ends the browser
      const left = context.pages().filter((x) => x !== p && !x.isClosed());
      if (left.length) page = left.at(-1)!;
      else alive = false;
    });
    p.on('crash', () => {
      if (p === page) alive = false;
    });
    p.on('dialog', (d) => {
      const type = d.type();
      const accept = type === 'alert' || type === 'beforeunload' || opts.dialogPolicy !== 'dismiss';
      void (accept ? d.accept() : d.dismiss()).catch(() => undefined);
      effect({ kind: 'dialog', type, message: d.message(), action: accept ? 'accepted' : 'dismissed' });
    });
    // a listener makes playwright take the chooser instead of opening the native dialog
    p.on('filechooser', (fc) => effect({ kind: 'filechooser', multiple: fc.isMultiple() }));
    p.on('download', (d) => {
      downloads++;
      void (async () => {
        try {
          const path = await downloadPath(opts.downloadsDir ?? 'downloads', d.suggestedFilename());
          await d.saveAs(path);
          effect({ kind: 'download', url: d.url(), path, size: (await stat(path)).size });
        } catch (e) {
          effect({ kind: 'download-failed', url: d.url(), reason: (await d.failure().catch(() => null)) ?? errorMessage(e) });
        } finally {
          downloads--;
        }
      })();
    });
  };

  /** A page opened by the driver's page (target=_blank, window.open) becomes the driver's page. */
  let adopting: Promise<void> = Promise.resolve();
  const adopt = (p: Page) => {
    if (p === page || swapping) return;
    adopting = adopting
      .then(async () => {
        const opener = await p.opener().catch(() => null);
        if (opener !== page) return;
        page = p;
        setupPage(p);
        await p.waitForLoadState('domcontentloaded', { timeout: opts.timeoutMs }).catch(() => undefined);
        effect({ kind: 'popup', url: p.url() });
      })
      .catch(() => undefined);
  };

  /** Creates the context (and, the first time without a profile, the browser) and takes its first page. */
  const open = async (v: Viewport) => {
    let ctx: BrowserContext;
    if (profileDir) {
      ctx = await chromium.launchPersistentContext(profileDir, { ...launchOptions, ...contextOptions(v) });
    } else {
      if (!browser) {
        const b = await chromium.launch(launchOptions);
        browser = b;
        b.on('disconnected', () => {
          alive = false;
        });
        if (opts.filter) await guardRequests((await b.newBrowserCDPSession()) as unknown as FetchSession, opts.filter);
      }
      ctx = await browser.newContext(contextOptions(v));
    }
    try {
      context = ctx;
      if (profileDir && opts.filter) {
        const b = ctx.browser();
        if (!b) throw coded('KEEL_E_PROVIDER_FAILED', 'playwright gave no browser for the persistent context: requests cannot be filtered');
        await guardRequests((await b.newBrowserCDPSession()) as unknown as FetchSession, opts.filter);
      }
      await setupContext(ctx);
      ctx.on('page', adopt);
      const p = ctx.pages()[0] ?? (await ctx.newPage());
      page = p;
      setupPage(p);
    } catch (e) {
      await ctx.close().catch(() => undefined);
      throw e;
    }
  };

  try {
    await open(viewport);
  } catch (e) {
    await browser?.close().catch(() => undefined);
    throw e;
  }

  /** Whether the page has a history entry to go back to (the blank page the browser started with does not count). */
  const sessions = new WeakMap<Page, Promise<CDPSession>>();
  const canGoBack = async () => {
    const p = page;
    let session = sessions.get(p);
    if (!session) {
      session = p.context().newCDPSession(p);
      sessions.set(p, session);
      session.catch(() => sessions.delete(p));
    }
    const h = await (await session).send('Page.getNavigationHistory');
    const prev = h.entries[h.currentIndex - 1];
    return !!prev && prev.url !== 'about:blank';
  };
  const nav = (r: Response | null): NavigationResult => ({ url: page.url(), ...(r ? { status: r.status() } : {}) });
  const t = (ms?: number) => ms ?? opts.timeoutMs;
  /** A CSS selector on the page, or a snapshot number inside its frame (through the frames the snapshot tagged). */
  const el = (target: Target) => {
    if (typeof target === 'string') return page.locator(target).first();
    let scope: Page | FrameLocator = page;
    for (const k of target.frames) scope = scope.frameLocator(`[data-keel-frame="${k}"]`);
    return scope.locator(refSelector(target.ref)).first();
  };

  const driver: BrowserDriver = {
    engine: 'engineA',
    async goto(url, timeoutMs) {
      await adopting;
      try {
        return nav(await page.goto(url, { waitUntil: 'load', timeout: t(timeoutMs) }));
      } catch (e) {
        await settleAfterFailedNavigation(e, () => page.url());
        throw e;
      }
    },
    async back(timeoutMs) {
      if (!(await canGoBack())) return undefined;
      const before = page.url();
      const r = await page.goBack({ waitUntil: 'load', timeout: t(timeoutMs) });
      if (!r && page.url() === before) return undefined;
      return nav(r);
    },
    async reload(timeoutMs) {
      return nav(await page.reload({ waitUntil: 'load', timeout: t(timeoutMs) }));
    },
    url: () => page.url(),
    title: () => page.title(),
    async evaluateIn<T = unknown>(frames: number[], fn: string, arg?: unknown): Promise<T> {
      await adopting;
      let frame = page.mainFrame();
      for (const k of frames) {
        const h = await frame.$(`[data-keel-frame="${k}"]`);
        const inner = await h?.contentFrame();
        await h?.dispose();
        if (!inner) throw coded('KEEL_E_NOT_FOUND', `frame ${k} is gone`);
        frame = inner;
      }
      return (await frame.evaluate(`(${fn}\n)(${arg === undefined ? '' : JSON.stringify(arg)})`)) as T;
    },
    async evaluate<T = unknown>(fn: string, arg?: unknown): Promise<T> {
      await adopting;
      // an expression built here and evaluated over CDP: no eval() in the page, so a page's CSP does not stop it
      const call = `(${fn}\n)(${arg === undefined ? '' : JSON.stringify(arg)})`;
      return (await page.evaluate(call)) as T;
    },
    async click(selector, timeoutMs) {
      await adopting;
      await el(selector).click({ timeout: t(timeoutMs) });
    },
    async type(selector, text, delayMs, timeoutMs) {
      await adopting;
      const loc = el(selector);
      await loc.focus({ timeout: t(timeoutMs) });
      let f = await loc.evaluate(FOCUS_END).catch(() => ({ focused: false, end: true }));
      if (!f.focused) {
        // not focusable itself (a wrapper around the field?): a click puts the focus where a user's would go
        await loc.click({ timeout: t(timeoutMs) });
        f = await loc.evaluate(FOCUS_END).catch(() => ({ focused: true, end: true }));
      }
      if (!f.end) await page.keyboard.press('End');
      await page.keyboard.type(text, { delay: delayMs ?? 0 });
    },
    async press(key) {
      const k = splitKey(key);
      await page.keyboard.press([...k.modifiers, k.key].join('+'));
    },
    async hover(selector, timeoutMs) {
      await adopting;
      await el(selector).hover({ timeout: t(timeoutMs) });
    },
    async select(selector, label, timeoutMs) {
      await adopting;
      const loc = el(selector);
      await loc.waitFor({ state: 'attached', timeout: t(timeoutMs) });
      const index = await loc.evaluate(FIND_OPTION, label);
      if (index < 0) return [];
      return loc.selectOption({ index }, { timeout: t(timeoutMs) });
    },
    async waitFor(selector, timeoutMs) {
      await adopting;
      await el(selector).waitFor({ state: 'attached', timeout: timeoutMs });
    },
    async screenshot({ fullPage, path }) {
      await adopting;
      await mkdir(dirname(path), { recursive: true });
      await page.screenshot({ path, fullPage, type: 'png' });
    },
    async setViewport(v) {
      if (sameEmulation(viewport, v)) {
        await page.setViewportSize({ width: v.width, height: v.height });
        viewport = v;
        return;
      }
      const url = page.url();
      const old = context;
      swapping = true;
      try {
        if (profileDir) await old.close().catch(() => undefined);
        await open(v);
        if (!profileDir) await old.close().catch(() => undefined);
      } catch (e) {
        if (profileDir) alive = false; // the old browser is closed and the new one did not start
        throw e;
      } finally {
        swapping = false;
      }
      viewport = v;
      if (url && url !== 'about:blank') await page.goto(url, { waitUntil: 'load' }).catch(() => undefined);
    },
    pendingDownloads: () => downloads,
    settle: () => adopting,
    raw: () => ({ page, browser: browser ?? context }),
    connected: () => alive && !closing && (browser ?? context.browser())?.isConnected() !== false,
    close() {
      closing ??= (async () => {
        alive = false;
        try {
          if (browser) await browser.close();
          else await context.close();
        } catch {
          // already gone
        }
      })();
      return closing;
    },
  };
  return driver;
}
