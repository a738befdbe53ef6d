/**
 * The browser's state: one browser at a time (started on the first browser skill, closed when idle), its engine,
 * profile and viewport, the last snapshot's numbering, console errors and warnings, recorded XHR/fetch requests,
 * the blank-page circuit breaker, and the request filter (trackers, non-public addresses).
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import type { PluginContext, WebCapability } from '../../../sdk/index.js';
import { DEFAULT_CDP_ENDPOINT, DEFAULT_TIMEOUT_MS } from '../manifest.js';
import { BlankPageBreaker, MAX_RECOVERY } from './breaker.js';
import { BASE_ARGS, launch, type BrowserDriver, type EngineId, type Viewport } from './driver.js';
import { MAX_ELEMENTS, MAX_TEXT, SNAPSHOT_SCRIPT, type PageSnapshot } from './snapshot.js';
import { DESKTOP, MOBILE, STEALTH_SCRIPT } from './stealth.js';
import { trackerOf } from './trackers.js';

export const EXECUTABLE_CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome-stable', '/usr/bin/google-chrome', '/snap/bin/chromium'];
const RING = 50;
const HOST_CACHE_MS = 60_000;

export class BrowserError extends Error {
  constructor(
    message: string,
    readonly code: string = 'KEEL_E_BROWSER',
  ) {
    super(message);
  }
}

export interface ConsoleEntry {
  type: string;
  text: string;
  url?: string;
  at: string;
}

export interface XhrEntry {
  method: string;
  url: string;
  status?: number;
  resourceType: string;
  at: string;
}

export class BrowserService {
  private driver: BrowserDriver | undefined;
  private starting: Promise<BrowserDriver> | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private engineOverride: EngineId | undefined;
  private endpointOverride: string | undefined;
  private profile = { name: 'default', dir: undefined as string | undefined };
  private viewport: Viewport = DESKTOP;
  /** Set by the circuit breaker: run with a window from now on. */
  private headful = false;
  readonly breaker = new BlankPageBreaker();
  readonly console: ConsoleEntry[] = [];
  readonly xhr: XhrEntry[] = [];
  lastUrl: string | undefined;
  private readonly hostVerdicts = new Map<string, { reason: string | undefined; at: number }>();
  private stopped = false;

  constructor(private readonly ctx: PluginContext) {}

  // ------------------------------------------------------------------ settings

  private get<T>(key: string, fallback: T): T {
    const v = this.ctx.config.get<T | undefined>(key);
    return v === undefined || v === null ? fallback : v;
  }

  engine(): EngineId {
    return this.engineOverride ?? this.get<EngineId>('browserEngine', 'engineA');
  }

  endpoint(): string {
    return this.endpointOverride ?? this.get('browserCdpEndpoint', DEFAULT_CDP_ENDPOINT);
  }

  timeoutMs(): number {
    return this.get('browserTimeoutMs', DEFAULT_TIMEOUT_MS);
  }

  viewportMode(): 'mobile' | 'desktop' {
    return this.viewport.isMobile ? 'mobile' : 'desktop';
  }

  /** The configured executable, or the first known Chromium location that exists. */
  executablePath(): string | undefined {
    const set = this.get('browserExecutablePath', '').trim();
    if (set) return set;
    return EXECUTABLE_CANDIDATES.find((p) => existsSync(p));
  }

  profileDir(engine: EngineId = this.engine()): string {
    if (this.profile.dir) return this.profile.dir;
    // SPEC's layout: engineA profiles in engineA-profiles/, the others in browser-profiles/.
    return join(this.ctx.home, engine === 'engineA' ? 'engineA-profiles' : 'browser-profiles', this.profile.name);
  }

  downloadsDir(): string {
    return join(this.ctx.home, 'downloads');
  }

  state() {
    return {
      running: Boolean(this.driver?.connected()),
      engine: this.engine(),
      profile: this.profile.name,
      viewport: this.viewportMode(),
      headless: this.headless(),
      lastUrl: this.lastUrl ?? null,
    };
  }

  private headless(): boolean {
    return this.headful ? false : this.get('browserHeadless', true);
  }

  // ------------------------------------------------------------------ request filter

  /** Why a request must not leave the browser, or undefined. Fails closed. */
  async refusal(url: string, resourceType = 'other'): Promise<string | undefined> {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return 'not a valid URL';
    }
    const scheme = u.protocol.slice(0, -1);
    if (scheme === 'data' || scheme === 'blob' || (scheme === 'about' && u.href === 'about:blank')) return undefined;
    if (!['http', 'https', 'ws', 'wss'].includes(scheme)) return `the ${scheme}: scheme is not allowed`;
    if (this.get('browserBlockTrackers', true) && (await trackerOf(url, resourceType, this.lastUrl))) return 'tracker';
    if (this.get('browserAllowPrivateNetwork', false)) return undefined;
    const host = u.hostname;
    const cached = this.hostVerdicts.get(host);
    if (cached && Date.now() - cached.at < HOST_CACHE_MS) return cached.reason;
    const web = this.ctx.use<WebCapability>('web');
    const reason = web?.checkHost ? await web.checkHost(host) : 'address checks are unavailable (the web plugin is not running)';
    this.hostVerdicts.set(host, { reason, at: Date.now() });
    return reason;
  }

  // ------------------------------------------------------------------ lifecycle

  /** The running browser, started when needed. */
  async page(): Promise<BrowserDriver> {
    if (this.stopped) throw new BrowserError('The browser plugin is stopping.');
    this.touch();
    if (this.driver?.connected()) return this.driver;
    if (this.driver) {
      this.ctx.log.warn('The browser stopped unexpectedly (crash or closed); starting it again.');
      await this.driver.close().catch(() => undefined);
      this.driver = undefined;
    }
    this.starting ??= this.start().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async start(): Promise<BrowserDriver> {
    const engine = this.engine();
    const common = {
      headless: this.headless(),
      viewport: this.viewport,
      timeoutMs: this.timeoutMs(),
      filter: async (url: string) => {
        const why = await this.refusal(url).catch((e: unknown) => `check failed: ${e instanceof Error ? e.message : String(e)}`);
        if (why && why !== 'tracker') this.ctx.log.debug(`browser: blocked ${url.slice(0, 200)}: ${why}`);
        return why;
      },
      onConsole: (m: { type: string; text: string; url?: string }) => {
        if (m.type !== 'error' && m.type !== 'warning' && m.type !== 'warn') return;
        this.console.push({ type: m.type === 'warn' ? 'warning' : m.type, text: m.text.slice(0, 1000), ...(m.url ? { url: m.url } : {}), at: new Date().toISOString() });
        if (this.console.length > RING) this.console.splice(0, this.console.length - RING);
      },
      onXhr: (r: { method: string; url: string; status?: number; resourceType: string }) => {
        if (!this.get('browserInterceptRequests', false)) return;
        this.xhr.push({ ...r, url: r.url.slice(0, 2000), at: new Date().toISOString() });
        if (this.xhr.length > RING) this.xhr.splice(0, this.xhr.length - RING);
      },
      initScript: STEALTH_SCRIPT,
      args: [...BASE_ARGS],
    };
    let driver: BrowserDriver;
    if (engine === 'engineC') {
      const endpoint = this.endpoint();
      driver = await launch({ engine, endpoint, ...common }).catch((e: unknown) => {
        throw new BrowserError(`Cannot connect to the CDP endpoint ${endpoint} (engineC): ${e instanceof Error ? e.message : String(e)}. Start the browser with its CDP server there, or switch_browser_engine engineA.`);
      });
    } else {
      const executablePath = this.executablePath();
      if (!executablePath) {
        throw new BrowserError(
          `No Chromium found (looked for ${EXECUTABLE_CANDIDATES.join(', ')}). Install it (Debian: apt-get install chromium) or set browserExecutablePath; Keel never downloads a browser.`,
          'KEEL_E_PLUGIN_ENVIRONMENT',
        );
      }
      const profileDir = this.profileDir(engine);
      await mkdir(profileDir, { recursive: true, mode: 0o700 });
      driver = await launch({ engine, executablePath, profileDir, ...common }).catch((e: unknown) => {
        const msg = e instanceof Error ? e.message : String(e);
        const locked = /SingletonLock|ProcessSingleton|profile.*in use/i.test(msg);
        throw new BrowserError(
          locked
            ? `The profile ${profileDir} is in use by another browser (another Keel process?). Use switch_browser_profile with another name.`
            : `The browser did not start (${engine}, ${executablePath}): ${msg.split('\n')[0]}`,
        );
      });
    }
    this.ctx.log.info(`Browser started: ${engine}${engine === 'engineC' ? ` at ${this.endpoint()}` : `, profile ${this.profile.name}`}, ${this.headless() ? 'headless' : 'with a window'}.`);
    this.driver = driver;
    return driver;
  }

  /** Closes the browser (the next skill starts it again). */
  async close(reason?: string): Promise<void> {
    clearTimeout(this.idleTimer);
    const d = this.driver;
    this.driver = undefined;
    const pending = this.starting;
    if (pending) await pending.then((x) => x.close()).catch(() => undefined);
    if (d) {
      await d.close().catch(() => undefined);
      if (reason) this.ctx.log.info(`Browser closed: ${reason}.`);
    }
  }

  private touch(): void {
    clearTimeout(this.idleTimer);
    const minutes = this.get('browserIdleCloseMinutes', 10);
    if (!(minutes > 0)) return;
    this.idleTimer = setTimeout(() => void this.close(`idle for ${minutes} minute(s)`), minutes * 60_000);
    this.idleTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.close();
  }

  health(): { ok: boolean; message?: string } {
    if (this.driver && !this.driver.connected()) return { ok: true, message: 'the browser stopped; it starts again on the next browser skill' };
    const engine = this.engine();
    if (engine !== 'engineC' && !this.executablePath()) {
      return { ok: true, message: 'no Chromium found: browser skills will fail until it is installed (apt-get install chromium) or browserExecutablePath is set' };
    }
    return { ok: true, message: this.driver ? `${engine} running` : `${engine} idle (starts on demand)` };
  }

  // ------------------------------------------------------------------ switches

  async switchEngine(engine: EngineId, endpoint?: string): Promise<void> {
    await this.close('engine switch');
    this.engineOverride = engine;
    if (endpoint !== undefined) this.endpointOverride = endpoint;
  }

  async switchProfile(name: string, dir?: string): Promise<string> {
    await this.close('profile switch');
    this.profile = { name, dir: dir ? (isAbsolute(dir) ? dir : resolve(this.ctx.home, dir)) : undefined };
    const path = this.profileDir();
    await mkdir(path, { recursive: true, mode: 0o700 });
    return path;
  }

  async setViewportMode(mode: 'mobile' | 'desktop'): Promise<Viewport> {
    this.viewport = mode === 'mobile' ? MOBILE : DESKTOP;
    if (this.driver?.connected()) await this.driver.setViewport(this.viewport);
    return this.viewport;
  }

  /** The breaker's move to headful: only where a window can open (a display, or not Linux). */
  async goHeadful(): Promise<boolean> {
    if (this.headful) return true;
    if (process.platform === 'linux' && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY) return false;
    this.headful = true;
    await this.close('blank pages: switching to headful mode');
    return true;
  }

  // ------------------------------------------------------------------ pages

  async snapshot(d?: BrowserDriver): Promise<PageSnapshot> {
    const driver = d ?? (await this.page());
    return driver.evaluate<PageSnapshot>(SNAPSHOT_SCRIPT, { maxElements: MAX_ELEMENTS, maxText: MAX_TEXT });
  }

  /**
   * Opens a URL and returns its snapshot, recovering a blank page (at most 3 attempts: wait, look again, reload)
   * and feeding the circuit breaker.
   */
  async navigate(url: string): Promise<{ snapshot: PageSnapshot; status?: number; recovered: number; note?: string }> {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw new BrowserError(`Not a valid URL: ${url.slice(0, 200)}. Give an absolute http(s) URL.`, 'KEEL_E_BROWSER_BAD_URL');
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new BrowserError(`Only http and https URLs can be opened; got ${u.protocol}`, 'KEEL_E_BROWSER_BAD_URL');
    const why = await this.refusal(u.href);
    if (why) throw new BrowserError(`Refused to open ${u.href}: ${why === 'tracker' ? 'it is a known ad/tracker host (browserBlockTrackers)' : why}.`, 'KEEL_E_BROWSER_REFUSED');
    const d = await this.page();
    const nav = await d.goto(u.href, this.timeoutMs()).catch((e: unknown) => {
      throw new BrowserError(`Could not open ${u.href}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`, 'KEEL_E_BROWSER_NAVIGATION');
    });
    this.lastUrl = nav.url;
    let snap = await this.snapshot(d);
    let recovered = 0;
    while (snap.blank && recovered < MAX_RECOVERY) {
      recovered++;
      await new Promise((r) => setTimeout(r, 300 * recovered));
      if (recovered > 1) await d.reload(this.timeoutMs()).catch(() => undefined);
      snap = await this.snapshot(d);
    }
    if (!snap.blank) {
      this.breaker.success(nav.url);
      return { snapshot: snap, ...(nav.status !== undefined ? { status: nav.status } : {}), recovered };
    }
    let note = `The page stayed blank after ${recovered} recovery attempts (blocked automation or a failed render).`;
    if (this.breaker.blank(nav.url)) {
      const domain = BlankPageBreaker.domainOf(nav.url);
      note += (await this.goHeadful())
        ? ` ${domain} gave ${this.breaker.count(nav.url)} blank pages in a row: the browser now runs with a window (headful); try again.`
        : ` ${domain} gave ${this.breaker.count(nav.url)} blank pages in a row: headful mode would be next, but there is no display here (set DISPLAY, e.g. with xvfb-run), so try a fresh profile (switch_browser_profile).`;
    }
    return { snapshot: snap, ...(nav.status !== undefined ? { status: nav.status } : {}), recovered, note };
  }
}
