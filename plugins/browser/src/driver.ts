/**
 * The engine-neutral browser driver: what the browser plugin's skills need from a browser, implemented once per
 * engine (engines/playwright.ts for engineA, engines/puppeteer.ts for engineB and, by connecting to a CDP
 * endpoint, engineC). Engines are imported lazily: a Keel that never browses never loads playwright-core or
 * puppeteer-core.
 */

export type EngineId = 'engineA' | 'engineB' | 'engineC';

export interface Viewport {
  width: number;
  height: number;
  deviceScaleFactor: number;
  isMobile: boolean;
  hasTouch: boolean;
  userAgent: string;
}

/** What an element operation acts on: a CSS selector, or a snapshot number inside its frame. */
export type Target = string | { ref: number; frames: number[] };

/** Something an action caused besides its own effect, reported in the skill's answer. */
export type SideEffect =
  | { kind: 'popup'; url: string }
  | { kind: 'download'; url: string; path: string; size: number }
  | { kind: 'download-failed'; url: string; reason: string }
  | { kind: 'dialog'; type: string; message: string; action: 'accepted' | 'dismissed' }
  | { kind: 'filechooser'; multiple: boolean };

export interface LaunchOptions {
  engine: EngineId;
  /** Chromium executable (engineA, engineB). */
  executablePath?: string | undefined;
  /** Persistent profile folder (cookies, local storage); created when missing (engineA, engineB). */
  profileDir?: string | undefined;
  /** CDP WebSocket endpoint (engineC), e.g. ws://127.0.0.1:9222/devtools/browser/<id>, or http://127.0.0.1:9222. */
  endpoint?: string | undefined;
  headless: boolean;
  viewport: Viewport;
  /** Default timeout of navigation and element operations, ms. */
  timeoutMs: number;
  /**
   * Decides every request the page makes (documents, sub-resources, XHR/fetch, redirects): `undefined` lets it
   * through, a string blocks it (the reason, for the log). Used for tracker blocking and the address checks.
   */
  filter?: (url: string, resourceType: string) => Promise<string | undefined> | string | undefined;
  /** Console messages of the page (errors and warnings are what the plugin keeps). */
  onConsole?: (m: { type: string; text: string; url?: string }) => void;
  /** XHR/fetch requests the page made, with their response status when known. */
  onXhr?: (r: { method: string; url: string; status?: number; resourceType: string }) => void;
  /** A script run in every page before its own scripts (stealth). */
  initScript?: string;
  /** Extra Chromium arguments. */
  args?: string[];
  /** Folder downloads are saved in (created when missing). */
  downloadsDir?: string;
  /** confirm and prompt dialogs: accepted or dismissed (alerts and beforeunload are always accepted). */
  dialogPolicy?: 'accept' | 'dismiss';
  /** Popups (adopted as the driver's page), downloads, dialogs, file choosers. */
  onEffect?: (e: SideEffect) => void;
  /** Environment of the browser process (DISPLAY for headful mode). */
  env?: Record<string, string | undefined>;
}

export interface NavigationResult {
  /** Final URL after redirects. */
  url: string;
  /** HTTP status of the main document, when there was one. */
  status?: number;
}

export interface BrowserDriver {
  readonly engine: EngineId;
  goto(url: string, timeoutMs?: number): Promise<NavigationResult>;
  /** Goes back in history; undefined when there is nothing to go back to. */
  back(timeoutMs?: number): Promise<NavigationResult | undefined>;
  reload(timeoutMs?: number): Promise<NavigationResult>;
  url(): string;
  title(): Promise<string>;
  /**
   * Evaluates a function in the page: `fn` is the source of a function expression (`(arg) => ...`), called with
   * `arg` (JSON). Resolves with its JSON-serialisable result.
   */
  evaluate<T = unknown>(fn: string, arg?: unknown): Promise<T>;
  /** `evaluate` in the document of a frame, found through the `data-keel-frame` numbers of `frames` (any origin). */
  evaluateIn<T = unknown>(frames: number[], fn: string, arg?: unknown): Promise<T>;
  click(target: Target, timeoutMs?: number): Promise<void>;
  /** Types into the element (focused first); `delayMs` between characters. */
  type(target: Target, text: string, delayMs?: number, timeoutMs?: number): Promise<void>;
  /** A key or a combination such as `Control+C`, `Shift+Enter`. */
  press(key: string): Promise<void>;
  hover(target: Target, timeoutMs?: number): Promise<void>;
  /** Selects the option whose visible label is `label`; resolves with the selected values. */
  select(target: Target, label: string, timeoutMs?: number): Promise<string[]>;
  /** Downloads started and not finished yet. */
  pendingDownloads(): number;
  /** Resolves when a popup being adopted is the driver's page (every operation waits for it too). */
  settle(): Promise<void>;
  waitFor(selector: string, timeoutMs: number): Promise<void>;
  screenshot(opts: { fullPage: boolean; path: string }): Promise<void>;
  setViewport(v: Viewport): Promise<void>;
  /** The engine's own objects, for browser_run_script (`page`, `browser` or context). */
  raw(): { page: unknown; browser: unknown };
  /** True while the browser process / connection is alive. */
  connected(): boolean;
  close(): Promise<void>;
}

/** Creates the driver of an engine (imports its library on first use). */
export async function launch(opts: LaunchOptions): Promise<BrowserDriver> {
  if (opts.engine === 'engineA') return (await import('./engines/playwright.js')).launchPlaywright(opts);
  return (await import('./engines/puppeteer.js')).launchPuppeteer(opts);
}

/** Chromium arguments every launched engine gets: headless-safe, no phoning home, automation flag hidden. */
export const BASE_ARGS = [
  '--no-first-run',
  '--no-default-browser-check',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-blink-features=AutomationControlled',
  '--password-store=basic',
];

/** A free path under `dir` for a download's suggested name (no folders, no hidden files, `name-2.ext` when taken). */
export async function downloadPath(dir: string, suggested: string): Promise<string> {
  const { mkdir, stat } = await import('node:fs/promises');
  const { basename, extname, join } = await import('node:path');
  await mkdir(dir, { recursive: true });
  const clean =
    basename(suggested || 'download')
      .replace(/[^\w.\- ]+/g, '_')
      .replace(/^\.+/, '')
      .slice(0, 120) || 'download';
  const ext = extname(clean);
  const stem = clean.slice(0, clean.length - ext.length);
  for (let i = 1; ; i++) {
    const p = join(dir, i === 1 ? clean : `${stem}-${i}${ext}`);
    const taken = await stat(p).then(
      () => true,
      () => false,
    );
    if (!taken) return p;
  }
}
