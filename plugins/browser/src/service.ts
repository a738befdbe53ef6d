/**
 * The browser's state: one browser at a time (started on the first browser skill, closed when idle), its engine,
 * profile and viewport, the last snapshot's refs, console errors and warnings, recorded XHR/fetch requests, side
 * effects of the running action, the blank-page circuit breaker, and the request filter (trackers, non-public
 * addresses through the web plugin's checkHost).
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import type { PluginContext } from '../../../sdk/index.js';
import { DEFAULT_CDP_ENDPOINT, DEFAULT_TIMEOUT_MS } from '../manifest.js';
import { BlankPageBreaker } from './breaker.js';
import { BASE_ARGS, launch, type BrowserDriver, type EngineId, type SideEffect, type Viewport } from './driver.js';
import { describeMismatch, RESOLVE_SCRIPT, type Fingerprint, type Resolution } from './refs.js';
import { DEFAULT_SNAPSHOT_TOKENS, renderSnapshot } from './render.js';
import { MAX_ELEMENTS, MAX_OUTLINE, SNAPSHOT_SCRIPT, type PageSnapshot } from './snapshot.js';
import { DESKTOP, MOBILE, STEALTH_SCRIPT } from './stealth.js';
import { trackerOf } from './trackers.js';
import { Xvfb } from './xvfb.js';
import { errorMessage } from '../../../sdk/errors.js';

export const EXECUTABLE_CANDIDATES = [
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome-stable',
  '/usr/bin/google-chrome',
  '/snap/bin/chromium',
];
const RING = 50;
const HOST_CACHE_MS = 60_000;
/** SPEC "Errors": the cause and next step of a crash. */
export const CRASH_MESSAGE =
  'Browser crashed. Cause: memory or GPU problems. The next browser skill starts a fresh browser (the profile keeps cookies).';

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
  private readonly xvfb = new Xvfb();
  readonly breaker = new BlankPageBreaker();
  readonly console: ConsoleEntry[] = [];
  readonly xhr: XhrEntry[] = [];
  /** Side effects since the running action began. */
  readonly effects: SideEffect[] = [];
  lastUrl: string | undefined;
  /** The refs of the last snapshot, by number. */
  private refs = new Map<number, Fingerprint>();
  /** What the last snapshot showed, to continue a truncated one. */
  private continuation: { url: string; part: number; shown: { refs: Set<number>; outline: Set<number> } } | undefined;
  /** Set when the browser died under us: the next result says so once. */
  crashed = false;
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

  maxTokens(): number {
    return this.get('browserSnapshotMaxTokens', DEFAULT_SNAPSHOT_TOKENS);
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
    const host = u.hostname;
    // the verdict depends on the web plugin's key too: a changed key must not meet an old verdict
    const key = `${this.ctx.config.get<boolean>('webAllowPrivateNetwork') === true}|${host}`;
    const cached = this.hostVerdicts.get(key);
    if (cached && Date.now() - cached.at < HOST_CACHE_MS) return cached.reason;
    // the web plugin's guard and its key (webAllowPrivateNetwork): the browser reaches what http_fetch reaches
    const web = this.ctx.use('web');
    const reason = web?.checkHost ? await web.checkHost(host) : 'address checks are unavailable (the web plugin is not running)';
    this.hostVerdicts.set(key, { reason, at: Date.now() });
    if (this.hostVerdicts.size > 1000) this.hostVerdicts.delete(this.hostVerdicts.keys().next().value!);
    return reason;
  }

  // ------------------------------------------------------------------ lifecycle

  /** The running browser, started when needed; a browser that died is noted (crashed) and replaced. */
  async page(): Promise<BrowserDriver> {
    if (this.stopped) throw new BrowserError('The browser plugin is stopping.');
    this.touch();
    if (this.driver?.connected()) return this.driver;
    if (this.driver) {
      this.ctx.log.warn(`${CRASH_MESSAGE} Starting a fresh one.`);
      this.crashed = true;
      await this.driver.close().catch(() => undefined);
      this.driver = undefined;
      this.refs.clear();
    }
    this.starting ??= this.start().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  /** Whether the running browser died (the caller's error is then a crash). */
  dead(): boolean {
    return this.driver !== undefined && !this.driver.connected();
  }

  private async start(): Promise<BrowserDriver> {
    const engine = this.engine();
    const headless = this.headless();
    const env = headless ? undefined : await this.display();
    const common = {
      headless,
      viewport: this.viewport,
      timeoutMs: this.timeoutMs(),
      filter: async (url: string, type: string) => {
        const why = await this.refusal(url, type).catch((e: unknown) => `check failed: ${errorMessage(e)}`);
        if (why && why !== 'tracker') this.ctx.log.debug(`browser: blocked ${url.slice(0, 200)}: ${why}`);
        return why;
      },
      onConsole: (m: { type: string; text: string; url?: string }) => {
        if (m.type !== 'error' && m.type !== 'warning' && m.type !== 'warn') return;
        this.console.push({
          type: m.type === 'warn' ? 'warning' : m.type,
          text: m.text.slice(0, 1000),
          ...(m.url ? { url: m.url } : {}),
          at: new Date().toISOString(),
        });
        if (this.console.length > RING) this.console.splice(0, this.console.length - RING);
      },
      onXhr: (r: { method: string; url: string; status?: number; resourceType: string }) => {
        if (!this.get('browserInterceptRequests', false)) return;
        this.xhr.push({ ...r, url: r.url.slice(0, 2000), at: new Date().toISOString() });
        if (this.xhr.length > RING) this.xhr.splice(0, this.xhr.length - RING);
      },
      onEffect: (e: SideEffect) => {
        this.effects.push(e);
        if (this.effects.length > RING) this.effects.splice(0, this.effects.length - RING);
      },
      downloadsDir: this.downloadsDir(),
      dialogPolicy: this.get<'accept' | 'dismiss'>('browserDialogPolicy', 'accept'),
      initScript: STEALTH_SCRIPT,
      args: [...BASE_ARGS],
      ...(env ? { env } : {}),
    };
    let driver: BrowserDriver;
    if (engine === 'engineC') {
      const endpoint = this.endpoint();
      driver = await launch({ engine, endpoint, ...common }).catch((e: unknown) => {
        throw new BrowserError(
          `Cannot connect to the CDP endpoint ${endpoint} (engineC): ${e instanceof Error ? e.message.split('\n')[0] : String(e)}. Start the browser with its CDP server there (e.g. chromium --remote-debugging-port=9222, or lightpanda serve), or switch_browser_engine engineA.`,
          'KEEL_E_PLUGIN_ENVIRONMENT',
        );
      });
    } else {
      const executablePath = this.executablePath();
      if (!executablePath) {
        throw new BrowserError(
          `No Chromium found (looked for ${EXECUTABLE_CANDIDATES.join(', ')}). Install it (Debian/Ubuntu: apt-get install chromium) or set browserExecutablePath; Keel never downloads a browser.`,
          'KEEL_E_PLUGIN_ENVIRONMENT',
        );
      }
      const profileDir = this.profileDir(engine);
      await mkdir(profileDir, { recursive: true, mode: 0o700 });
      driver = await launch({ engine, executablePath, profileDir, ...common }).catch((e: unknown) => {
        const msg = errorMessage(e);
        const locked = /SingletonLock|ProcessSingleton|profile.*in use/i.test(msg);
        throw new BrowserError(
          locked
            ? `The profile ${profileDir} is in use by another browser (another Keel process?). Use switch_browser_profile with another name.`
            : `The browser did not start (${engine}, ${executablePath}): ${msg.split('\n')[0]}`,
        );
      });
    }
    this.ctx.log.info(
      `Browser started: ${engine}${engine === 'engineC' ? ` at ${this.endpoint()}` : `, profile ${this.profile.name}`}, ${headless ? 'headless' : 'with a window'}.`,
    );
    this.driver = driver;
    return driver;
  }

  /** DISPLAY for a headful browser: the one set, else a private Xvfb; a clear error when neither exists. */
  private async display(): Promise<Record<string, string> | undefined> {
    if (process.platform !== 'linux' || process.env.DISPLAY || process.env.WAYLAND_DISPLAY) return undefined;
    const d = await this.xvfb.start().catch((e: unknown) => {
      throw new BrowserError(
        `Headful mode needs a display and there is none: DISPLAY is not set and ${errorMessage(e)}. Install Xvfb (apt-get install xvfb) or set DISPLAY; meanwhile set browserHeadless true or try a fresh profile.`,
        'KEEL_E_PLUGIN_ENVIRONMENT',
      );
    });
    return { DISPLAY: d };
  }

  /** Closes the browser (the next skill starts it again). */
  async close(reason?: string): Promise<void> {
    clearTimeout(this.idleTimer);
    const d = this.driver;
    this.driver = undefined;
    this.refs.clear();
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
    this.xvfb.stop();
  }

  health(): { ok: boolean; message?: string } {
    if (this.dead()) return { ok: true, message: 'the browser stopped; it starts again on the next browser skill' };
    const engine = this.engine();
    if (engine !== 'engineC' && !this.executablePath()) {
      return {
        ok: true,
        message:
          'no Chromium found: browser skills will fail until it is installed (apt-get install chromium) or browserExecutablePath is set',
      };
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

  /** The breaker's move to headful (the next start runs with a window). */
  async goHeadful(): Promise<void> {
    if (this.headful) return;
    this.headful = true;
    await this.close('blank pages: switching to headful mode');
  }

  isHeadful(): boolean {
    return this.headful;
  }

  // ------------------------------------------------------------------ snapshots and refs

  async snapshot(d?: BrowserDriver): Promise<PageSnapshot> {
    const driver = d ?? (await this.page());
    const snap = await driver.evaluate<PageSnapshot>(SNAPSHOT_SCRIPT, { maxElements: MAX_ELEMENTS, maxOutline: MAX_OUTLINE });
    await this.crossOriginFrames(driver, snap);
    this.refs = new Map(
      snap.elements.map((e) => [e.ref, { ref: e.ref, kind: e.kind, label: e.label, frames: e.frames, path: e.path, root: e.root ?? [] }]),
    );
    return snap;
  }

  /**
   * Frames of another origin are snapshotted in their own documents (the page's script cannot enter them) and
   * merged in place: their elements are numbered after the page's, positioned by the frame's offset. At most 20.
   */
  private async crossOriginFrames(d: BrowserDriver, snap: PageSnapshot): Promise<void> {
    const queue = [...(snap.remote ?? [])].map((f) => ({ ...f, base: f.order }));
    let lastRef = snap.elements.reduce((m, e) => Math.max(m, e.ref), 0);
    for (let done = 0; queue.length && done < 20; done++) {
      const f = queue.shift()!;
      const sub = await d
        .evaluateIn<PageSnapshot>(f.frames, SNAPSHOT_SCRIPT, {
          maxElements: Math.max(0, MAX_ELEMENTS - snap.elements.length),
          maxOutline: MAX_OUTLINE,
          startRef: lastRef,
          offY: f.offY,
          viewH: snap.viewH,
        })
        .catch(() => undefined);
      // sub-items keep the frame's place in the document order
      const at = (o: number) => f.base + (o + 1) / 1e6;
      if (!sub) {
        snap.outline.push({
          text: `[frame: ${f.url} (another origin; it could not be read)]`,
          level: 0,
          inView: f.inView,
          distance: 0,
          order: f.base,
        });
        continue;
      }
      for (const e of sub.elements) snap.elements.push({ ...e, frames: [...f.frames, ...e.frames], root: f.frames, order: at(e.order) });
      for (const o of sub.outline) snap.outline.push({ ...o, order: at(o.order) });
      snap.more += sub.more;
      snap.hasPassword ||= sub.hasPassword;
      if (sub.elements.length || sub.outline.length) snap.blank = false;
      lastRef = sub.elements.reduce((m, e) => Math.max(m, e.ref), lastRef);
      for (const r of sub.remote ?? []) queue.push({ ...r, frames: [...f.frames, ...r.frames], base: at(r.order) });
    }
    delete snap.remote;
  }

  /**
   * The snapshot as text within the token budget. `continueTruncated`: when the last snapshot of this same page was
   * truncated and nothing happened since, what it left out comes first.
   */
  render(snap: PageSnapshot, header: string[] = [], continueTruncated = false): string {
    const prev = continueTruncated && this.continuation?.url === snap.url ? this.continuation : undefined;
    const r = renderSnapshot(snap, { maxTokens: this.maxTokens(), header, ...(prev ? { shown: prev.shown, part: prev.part + 1 } : {}) });
    this.continuation = r.truncated ? { url: snap.url, part: prev ? prev.part + 1 : 1, shown: r.shown } : undefined;
    return r.text;
  }

  /** Anything but a repeated browser_examine_page ends a continuation. */
  resetContinuation(): void {
    this.continuation = undefined;
  }

  fingerprint(ref: number): Fingerprint | undefined {
    return this.refs.get(ref);
  }

  /** Checks that snapshot number `ref` still names its element (re-tagging it after a re-render), else throws. */
  async resolveRef(d: BrowserDriver, ref: number): Promise<{ fp: Fingerprint; moved: boolean }> {
    const fp = this.refs.get(ref);
    if (!fp) {
      throw new BrowserError(
        this.refs.size
          ? `There is no [${ref}] in the last snapshot (it has ${this.refs.size} numbered elements). Take a new one with browser_examine_page.`
          : `No snapshot has numbered the elements yet: call browser_examine_page, then use its numbers.`,
        'KEEL_E_BROWSER_NOT_FOUND',
      );
    }
    // in the document the snapshot ran in (a cross-origin frame's own), with the frame path relative to it
    const root = fp.root ?? [];
    const r = root.length
      ? await d.evaluateIn<Resolution>(root, RESOLVE_SCRIPT, { ...fp, frames: fp.frames.slice(root.length) })
      : await d.evaluate<Resolution>(RESOLVE_SCRIPT, fp);
    if (r.ok) return { fp, moved: r.moved };
    const what = describeMismatch(fp, r);
    const fresh = await this.snapshot(d).catch(() => undefined);
    throw new BrowserError(
      `${what} Nothing was done.${fresh ? `\n\nFresh snapshot (the numbers below replace the old ones):\n${this.render(fresh)}` : ''}`,
      'KEEL_E_BROWSER_STALE_REF',
    );
  }

  /**
   * Runs an action and reports its side effects: a navigation, a new tab adopted as the page, downloads (waited
   * for, within the timeout), dialogs and file choosers.
   */
  async act(d: BrowserDriver, run: () => Promise<void>): Promise<{ lines: string[]; driver: BrowserDriver }> {
    this.resetContinuation();
    const before = d.url();
    this.effects.length = 0;
    await run();
    // the window in which an action's consequences show: a navigation commits, a popup opens, a download begins
    await new Promise((r) => setTimeout(r, 300));
    await d.settle();
    const deadline = Date.now() + this.timeoutMs();
    while (d.pendingDownloads() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const lines: string[] = [];
    for (const e of this.effects.splice(0)) {
      if (e.kind === 'popup') lines.push(`A new tab opened and is now the current page: ${e.url}`);
      else if (e.kind === 'download') lines.push(`Downloaded ${e.url} to ${e.path} (${e.size} bytes).`);
      else if (e.kind === 'download-failed') lines.push(`A download of ${e.url} failed: ${e.reason}.`);
      else if (e.kind === 'dialog')
        lines.push(`A ${e.type} dialog said ${JSON.stringify(e.message.slice(0, 500))}; it was ${e.action} (browserDialogPolicy).`);
      else
        lines.push(
          `A file chooser opened (${e.multiple ? 'several files' : 'one file'}); it was dismissed: files cannot be chosen through these skills.`,
        );
    }
    const now = d.url();
    if (now !== before && !lines.some((l) => l.startsWith('A new tab'))) lines.push(`The page navigated to ${now}.`);
    this.lastUrl = now;
    return { lines, driver: d };
  }
}
