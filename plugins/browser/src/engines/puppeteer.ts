/**
 * engineB and engineC: the browser driver on puppeteer-core.
 *
 * engineB launches the system Chromium (never a downloaded one) over a pipe (no DevTools port is opened), with the
 * profile folder as its user data dir, and works on the browser's first page.
 *
 * engineC connects to a browser that is already running with its CDP server (a `ws://`/`wss://` browser endpoint,
 * or the `http://host:port` of its DevTools server) and works on a new tab of its own; `close()` closes that tab
 * and disconnects, the browser itself keeps running.
 *
 * Requests are decided by `filter`. engineB, owning its browser, does it on a browser-level CDP session (Fetch
 * domain): every request of every page, popup, frame and worker, each hop of a redirect included. engineC shares
 * the browser with whoever started it, so it intercepts only its own tab (puppeteer's request interception, redirects
 * included) and, as a best effort, the popups that tab opens (a popup's very first request can slip through before
 * its interception is set up). Service workers are kept out of the way: the page bypasses them and cannot register
 * new ones. WebSocket handshakes are not interceptable over CDP and do not reach the filter.
 */
import { errorsFor } from '../../../../sdk/errors.js';
import { mkdir, rename, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import puppeteer, {
  type Browser,
  type CDPSession,
  type ConnectOptions,
  type Frame,
  type HTTPRequest,
  type KeyInput,
  type LaunchOptions as PuppeteerLaunchOptions,
  type Page,
  type Target,
  type Viewport as PuppeteerViewport,
} from 'puppeteer-core';
import {
  BASE_ARGS,
  downloadPath,
  type BrowserDriver,
  type LaunchOptions,
  type NavigationResult,
  type SideEffect,
  type Target as DriverTarget,
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

/** Runs before the page's scripts: no new service worker registrations (they would fetch outside the interception). */
const NO_SERVICE_WORKERS = `(() => {
  try {
    if (typeof ServiceWorkerContainer !== 'undefined') {
      const register = function register() { return Promise.reject(new DOMException('Service workers are disabled in this browser.', 'SecurityError')); };
      Object.defineProperty(register, 'toString', { value: () => 'function register() { [native code] }' });
      ServiceWorkerContainer.prototype.register = register;
    }
  } catch {}
})();`;

/** The value of the option labelled `label` in a <select> (null when none). */
const FIND_OPTION = (el: PageElement, label: string): string | null => {
  // keel-plain-error: runs in the browser page (serialised by page.evaluate), where the SDK cannot be imported.
  if (el.tagName !== 'SELECT' || !el.options) throw new Error(`not a <select> element but <${el.tagName.toLowerCase()}>`);
  const norm = (s: string) => s.replace(/\s+/g, ' ').trim();
  const want = norm(label);
  const options = Array.from(el.options);
  const o =
    options.find((x) => norm(x.label) === want || norm(x.textContent ?? '') === want) ??
    options.find((x) => norm(x.label).toLowerCase() === want.toLowerCase());
  return o ? o.value : null;
};

function puppeteerViewport(v: Viewport): PuppeteerViewport {
  return { width: v.width, height: v.height, deviceScaleFactor: v.deviceScaleFactor, isMobile: v.isMobile, hasTouch: v.hasTouch };
}

/** puppeteer.connect options of a CDP endpoint: a browser WebSocket endpoint or the DevTools HTTP server. */
function connectTarget(endpoint: string | undefined): Pick<ConnectOptions, 'browserWSEndpoint' | 'browserURL'> {
  const ep = endpoint?.trim();
  if (!ep)
    throw coded(
      'KEEL_E_NOT_CONFIGURED',
      'engineC needs a CDP endpoint: set browserCdpEndpoint (e.g. http://127.0.0.1:9222 or ws://127.0.0.1:9222/devtools/browser/<id>).',
    );
  if (/^wss?:\/\//i.test(ep)) return { browserWSEndpoint: ep };
  if (/^https?:\/\//i.test(ep)) return { browserURL: ep };
  throw coded('KEEL_E_INVALID_ARGUMENT', `Not a CDP endpoint: ${ep.slice(0, 200)} (give ws://, wss://, http:// or https://).`);
}

export async function launchPuppeteer(opts: LaunchOptions): Promise<BrowserDriver> {
  const remote = opts.engine === 'engineC';
  let browser: Browser;
  if (remote) {
    const target = connectTarget(opts.endpoint);
    const connect = (t: typeof target) => puppeteer.connect({ ...t, defaultViewport: puppeteerViewport(opts.viewport) });
    browser = await connect(target).catch((e: unknown) => {
      // ws://host:port without the /devtools/browser/<id> path (SPEC's default ws://127.0.0.1:9222): Lightpanda
      // answers there, Chrome and Chromium do not; their DevTools HTTP server on the same port names the endpoint.
      const ws = target.browserWSEndpoint ? new URL(target.browserWSEndpoint) : undefined;
      if (!ws || (ws.pathname !== '/' && ws.pathname !== '')) throw e;
      return connect({ browserURL: `${ws.protocol === 'wss:' ? 'https' : 'http'}://${ws.host}` });
    });
  } else {
    const executablePath = opts.executablePath;
    if (!executablePath) {
      throw coded(
        'KEEL_E_NOT_CONFIGURED',
        `${opts.engine} needs a Chromium executable: set browserExecutablePath (Keel never downloads a browser).`,
      );
    }
    if (opts.profileDir) await mkdir(opts.profileDir, { recursive: true, mode: 0o700 });
    const isRoot = process.getuid?.() === 0;
    const launchOptions: PuppeteerLaunchOptions = {
      executablePath,
      headless: opts.headless,
      ...(opts.profileDir ? { userDataDir: opts.profileDir } : {}),
      args: [...new Set([...BASE_ARGS, ...(opts.args ?? []), ...(isRoot ? ['--no-sandbox'] : [])])],
      defaultViewport: puppeteerViewport(opts.viewport),
      // no "controlled by automated software" flag (and navigator.webdriver stays false)
      ignoreDefaultArgs: ['--enable-automation'],
      // CDP over a pipe: no DevTools port other local processes could connect to
      pipe: true,
      // Keel shuts the browser down itself; puppeteer's handlers would exit the process on a signal
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
      timeout: Math.max(30_000, opts.timeoutMs),
      ...(opts.env ? { env: { ...process.env, ...opts.env } } : {}),
    };
    browser = await puppeteer.launch(launchOptions).catch((e: unknown) => {
      const msg = errorMessage(e);
      // the same wording as Chromium's own (and engineA's) error, so callers recognise a profile in use
      if (/already running for/i.test(msg))
        throw coded(
          'KEEL_E_UNAVAILABLE',
          `Failed to create a ProcessSingleton: the profile ${opts.profileDir} is in use by another browser. ${msg}`,
        );
      throw e;
    });
    if (opts.filter) {
      try {
        await guardRequests((await browser.target().createCDPSession()) as unknown as FetchSession, opts.filter);
      } catch (e) {
        await browser.close().catch(() => undefined);
        throw e;
      }
    }
  }

  let alive = true;
  let closing: Promise<void> | undefined;
  const reported = new WeakSet<HTTPRequest>();
  browser.on('disconnected', () => {
    alive = false;
  });

  const onRequest = (req: HTTPRequest) => {
    if (req.isInterceptResolutionHandled()) return;
    void (async () => {
      let reason: string | undefined | null;
      try {
        reason = await opts.filter!(req.url(), req.resourceType());
      } catch (e) {
        reason = `the request filter failed: ${errorMessage(e)}`;
      }
      try {
        if (reason !== undefined && reason !== null) await req.abort('blockedbyclient');
        else await req.continue();
      } catch {
        // the page went away, or the request was already handled
      }
    })();
  };

  /** Interception (engineC), init scripts and timeouts of a page (the driver's, or a popup it opened). */
  const prepare = async (p: Page) => {
    p.setDefaultTimeout(opts.timeoutMs);
    p.setDefaultNavigationTimeout(opts.timeoutMs);
    if (opts.filter && remote) {
      p.on('request', onRequest);
      await p.setRequestInterception(true);
    }
    await p.setBypassServiceWorker(true);
    await p.evaluateOnNewDocument(NO_SERVICE_WORKERS);
    if (opts.initScript) await p.evaluateOnNewDocument(opts.initScript);
  };

  let page: Page;
  try {
    page = remote ? await browser.newPage() : ((await browser.pages())[0] ?? (await browser.newPage()));
    if (opts.viewport.userAgent) await page.setUserAgent({ userAgent: opts.viewport.userAgent });
    await prepare(page);
  } catch (e) {
    await (remote ? browser.disconnect() : browser.close()).catch(() => undefined);
    throw e;
  }

  const reportXhr = (req: HTTPRequest, status: number | undefined) => {
    if (!opts.onXhr || reported.has(req) || !XHR_TYPES.has(req.resourceType())) return;
    reported.add(req);
    const r = { method: req.method(), url: req.url(), resourceType: req.resourceType(), ...(status !== undefined ? { status } : {}) };
    safely(() => opts.onXhr!(r));
  };
  const effect = (e: SideEffect) => safely(() => opts.onEffect?.(e));

  /** Listeners of the driver's page (the first one, or a popup it adopted). */
  const watch = async (p: Page) => {
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
      p.on('response', (res) => reportXhr(res.request(), res.status()));
      p.on('requestfailed', (req) => reportXhr(req, undefined));
    }
    p.on('close', () => {
      if (p !== page) return;
      // an adopted popup that closed hands back to its opener; the last page closing ends the session
      if (opener.has(p) && !opener.get(p)!.isClosed()) page = opener.get(p)!;
      else alive = false;
    });
    p.on('error', () => {
      if (p === page) alive = false; // the page crashed
    });
    p.on('dialog', (d) => {
      const type = d.type();
      const accept = type === 'alert' || type === 'beforeunload' || opts.dialogPolicy !== 'dismiss';
      void (accept ? d.accept() : d.dismiss()).catch(() => undefined);
      effect({ kind: 'dialog', type, message: d.message(), action: accept ? 'accepted' : 'dismissed' });
    });
    // the chooser is taken over CDP (no native dialog) and reported
    const session = await p.createCDPSession();
    session.on('Page.fileChooserOpened', (e) => effect({ kind: 'filechooser', multiple: e.mode === 'selectMultiple' }));
    await session.send('Page.enable');
    await session.send('Page.setInterceptFileChooserDialog', { enabled: true });
  };
  const opener = new WeakMap<Page, Page>();

  /** A page opened by the driver's page (target=_blank, window.open) becomes the driver's page. */
  let adopting: Promise<void> = Promise.resolve();
  browser.on('targetcreated', (target: Target) => {
    if (target.type() !== 'page' || target.opener() !== page.target()) return;
    adopting = adopting
      .then(async () => {
        const from = page;
        const p = await target.page();
        if (!p) return;
        // its interception (engineC), the stealth script and the service-worker block, for its next documents
        await prepare(p).catch(() => undefined);
        await watch(p).catch(() => undefined);
        opener.set(p, from);
        page = p;
        await p.bringToFront().catch(() => undefined);
        await p.waitForFunction('document.readyState !== "loading"', { timeout: opts.timeoutMs }).catch(() => undefined);
        effect({ kind: 'popup', url: p.url() });
      })
      .catch(() => undefined);
  });

  // Downloads: saved by Chromium under a temporary name in the downloads folder, renamed to the suggested name.
  let downloads = 0;
  if (opts.downloadsDir) {
    const dir = opts.downloadsDir;
    await mkdir(dir, { recursive: true });
    const session = await browser.target().createCDPSession();
    const started = new Map<string, { url: string; name: string }>();
    session.on('Browser.downloadWillBegin', (e) => {
      downloads++;
      started.set(e.guid, { url: e.url, name: e.suggestedFilename });
    });
    session.on('Browser.downloadProgress', (e) => {
      const d = started.get(e.guid);
      if (!d || e.state === 'inProgress') return;
      started.delete(e.guid);
      void (async () => {
        try {
          if (e.state !== 'completed') return effect({ kind: 'download-failed', url: d.url, reason: e.state });
          const path = await downloadPath(dir, d.name);
          await rename(join(dir, e.guid), path);
          effect({ kind: 'download', url: d.url, path, size: (await stat(path)).size });
        } catch (err) {
          effect({ kind: 'download-failed', url: d.url, reason: errorMessage(err) });
        } finally {
          downloads--;
        }
      })();
    });
    await session.send('Browser.setDownloadBehavior', { behavior: 'allowAndName', downloadPath: dir, eventsEnabled: true });
  }
  try {
    await watch(page);
  } catch (e) {
    await (remote ? browser.disconnect() : browser.close()).catch(() => undefined);
    throw e;
  }

  /** Whether the page has a history entry to go back to (the blank page the browser started with does not count). */
  let session: Promise<CDPSession> | undefined;
  const canGoBack = async () => {
    if (!session) {
      const created = page.createCDPSession();
      session = created;
      created.catch(() => {
        if (session === created) session = undefined;
      });
    }
    const h = await (await session).send('Page.getNavigationHistory');
    const prev = h.entries[h.currentIndex - 1];
    return !!prev && prev.url !== 'about:blank';
  };
  const nav = (r: { status(): number } | null): NavigationResult => ({ url: page.url(), ...(r ? { status: r.status() } : {}) });
  const t = (ms?: number) => ms ?? opts.timeoutMs;
  /** The frame and selector of a target: a snapshot number is found through the frames the snapshot tagged. */
  const scope = async (target: DriverTarget, timeoutMs: number): Promise<{ frame: Frame; sel: string }> => {
    await adopting;
    if (typeof target === 'string') return { frame: page.mainFrame(), sel: target };
    let frame = page.mainFrame();
    for (const k of target.frames) {
      const h = await frame.waitForSelector(`pierce/[data-keel-frame="${k}"]`, { timeout: timeoutMs });
      const inner = await h?.contentFrame();
      await h?.dispose().catch(() => undefined);
      if (!inner) throw coded('KEEL_E_NOT_FOUND', `frame ${k} of the snapshot is gone`);
      frame = inner;
    }
    return { frame, sel: `pierce/${refSelector(target.ref)}` };
  };

  const driver: BrowserDriver = {
    engine: opts.engine,
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
        const h = await frame.$(`pierce/[data-keel-frame="${k}"]`);
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
    async click(target, timeoutMs) {
      const { frame, sel } = await scope(target, t(timeoutMs));
      await frame.locator(sel).setTimeout(t(timeoutMs)).click();
    },
    async type(target, text, delayMs, timeoutMs) {
      const { frame, sel } = await scope(target, t(timeoutMs));
      const h = await frame.locator(sel).setTimeout(t(timeoutMs)).waitHandle();
      try {
        await h.focus();
        let f = await h.evaluate(FOCUS_END).catch(() => ({ focused: false, end: true }));
        if (!f.focused) {
          // not focusable itself (a wrapper around the field?): a click puts the focus where a user's would go
          await h.click();
          f = await h.evaluate(FOCUS_END).catch(() => ({ focused: true, end: true }));
        }
        if (!f.end) await page.keyboard.press('End');
        await page.keyboard.type(text, { delay: delayMs ?? 0 });
      } finally {
        await h.dispose().catch(() => undefined);
      }
    },
    async press(key) {
      const k = splitKey(key);
      const down: string[] = [];
      try {
        for (const m of k.modifiers) {
          await page.keyboard.down(m as KeyInput);
          down.push(m);
        }
        await page.keyboard.press(k.key as KeyInput);
      } finally {
        for (const m of down.reverse()) await page.keyboard.up(m as KeyInput).catch(() => undefined);
      }
    },
    async hover(target, timeoutMs) {
      const { frame, sel } = await scope(target, t(timeoutMs));
      await frame.locator(sel).setTimeout(t(timeoutMs)).hover();
    },
    async select(target, label, timeoutMs) {
      const { frame, sel } = await scope(target, t(timeoutMs));
      const h = await frame.waitForSelector(sel, { timeout: t(timeoutMs) });
      if (!h) return [];
      try {
        const value = await h.evaluate(FIND_OPTION, label);
        if (value === null) return [];
        return await h.select(value);
      } finally {
        await h.dispose().catch(() => undefined);
      }
    },
    async waitFor(selector, timeoutMs) {
      const h = await page.waitForSelector(selector, { timeout: timeoutMs });
      await h?.dispose().catch(() => undefined);
    },
    async screenshot({ fullPage, path }) {
      await mkdir(dirname(path), { recursive: true });
      await page.screenshot({ path: path as `${string}.png`, fullPage, type: 'png' });
    },
    async setViewport(v) {
      if (v.userAgent) await page.setUserAgent({ userAgent: v.userAgent });
      // puppeteer applies touch emulation itself and reloads the page when the mobile or touch mode changes
      await page.setViewport(puppeteerViewport(v));
    },
    pendingDownloads: () => downloads,
    settle: () => adopting,
    raw: () => ({ page, browser }),
    connected: () => alive && !closing && browser.connected,
    close() {
      closing ??= (async () => {
        alive = false;
        if (remote) {
          await page.close().catch(() => undefined);
          await browser.disconnect().catch(() => undefined);
          return;
        }
        try {
          await browser.close();
        } catch {
          try {
            browser.process()?.kill('SIGKILL');
          } catch {
            // already gone
          }
        }
      })();
      return closing;
    },
  };
  return driver;
}
