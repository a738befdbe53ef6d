/**
 * Browser automation (SPEC "Browser automation"): a real Chromium driven by engineA (playwright-core), engineB
 * (puppeteer-core) or engineC (any browser that speaks CDP, connected over its WebSocket). See docs/browser.md.
 */
import { Type, type PluginManifest } from '../../sdk/index.js';
import { DEFAULT_SNAPSHOT_TOKENS } from './src/render.js';

export const ENGINES = ['engineA', 'engineB', 'engineC'] as const;
export const DEFAULT_CDP_ENDPOINT = 'ws://127.0.0.1:9222';
export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_SCROLL_PX = 500;
export const SLOW_TYPING_MS = 100;

const ref = Type.Union([Type.String({ minLength: 1, maxLength: 2000 }), Type.Integer({ minimum: 1 })], {
  description: 'A CSS selector, or the number [n] of an element in the last snapshot',
});
const none = Type.Object({}, { additionalProperties: false });

/** Every browser skill drives the one shared page: never run two at once. */
const common = { category: 'browser', isParallelSafe: false } as const;

const manifest = {
  id: 'browser',
  version: '1.0.0',
  kind: 'skill',
  description:
    'Drives a real Chromium (engineA playwright-core, engineB puppeteer-core, engineC a CDP endpoint): semantic page snapshots with numbered elements, clicks, typing, screenshots, vision, CAPTCHA solving, persistent profiles, tracker blocking, a blank-page circuit breaker.',
  permissions: {
    network: true,
    filesystem: ['$KEEL_HOME/engineA-profiles', '$KEEL_HOME/browser-profiles', '$KEEL_HOME/downloads'],
    commands: true,
  },
  config: {
    browserEngine: {
      schema: Type.Union(ENGINES.map((e) => Type.Literal(e))),
      default: 'engineA',
      env: ['KEEL_BROWSER_ENGINE'],
      policy: 'SAFE',
      description:
        'Engine of the next browser start: engineA (playwright-core, default), engineB (puppeteer-core), engineC (connect to browserCdpEndpoint).',
    },
    browserExecutablePath: {
      schema: Type.String({ maxLength: 4096 }),
      default: '',
      env: ['KEEL_BROWSER_EXECUTABLE', 'CHROME_PATH'],
      policy: 'LOCKED',
      description:
        'Chromium (or Chrome) executable for engineA and engineB. Empty: the first of /usr/bin/chromium, /usr/bin/chromium-browser, /usr/bin/google-chrome-stable, /usr/bin/google-chrome, /snap/bin/chromium that exists. Keel never downloads a browser. LOCKED: it names a program Keel runs.',
    },
    browserCdpEndpoint: {
      schema: Type.String({ minLength: 1, maxLength: 2048, pattern: '^(wss?|https?)://' }),
      default: DEFAULT_CDP_ENDPOINT,
      env: ['KEEL_BROWSER_CDP_ENDPOINT'],
      policy: 'SAFE',
      description:
        'engineC: the CDP endpoint to connect to (ws:// WebSocket of the browser, or http:// of its DevTools server). A non-loopback endpoint set through switch_browser_engine needs an admin.',
    },
    browserHeadless: {
      schema: Type.Boolean(),
      default: true,
      env: ['KEEL_BROWSER_HEADLESS'],
      policy: 'SAFE',
      description:
        'Run Chromium without a window. The blank-page circuit breaker switches to headful by itself when a display is available.',
    },
    browserTimeoutMs: {
      schema: Type.Integer({ minimum: 1000, maximum: 300_000 }),
      default: DEFAULT_TIMEOUT_MS,
      env: ['KEEL_BROWSER_TIMEOUT_MS'],
      policy: 'SAFE',
      description: 'Timeout of a navigation or an element operation, in milliseconds.',
    },
    browserBlockTrackers: {
      schema: Type.Boolean(),
      default: true,
      env: ['KEEL_BROWSER_BLOCK_TRACKERS'],
      policy: 'SAFE',
      description:
        "Block ad and analytics requests, from Ghostery's Tracker Database shipped in the @ghostery/trackerdb package (nothing is fetched at run time; docs/browser.md).",
    },
    browserInterceptRequests: {
      schema: Type.Boolean(),
      default: false,
      env: ['KEEL_BROWSER_INTERCEPT_REQUESTS'],
      policy: 'SAFE',
      description: 'Record the XHR/fetch requests pages make (method, URL, status); browser_examine_page lists the latest.',
    },
    browserSnapshotMaxTokens: {
      schema: Type.Integer({ minimum: 500, maximum: 100_000 }),
      default: DEFAULT_SNAPSHOT_TOKENS,
      env: ['KEEL_BROWSER_SNAPSHOT_MAX_TOKENS'],
      policy: 'SAFE',
      description:
        'Most tokens of a page snapshot (estimated at 3.5 characters a token). The viewport and interactive elements come first; a marker says what was left out, and browser_examine_page again shows the rest.',
    },
    browserDialogPolicy: {
      schema: Type.Union([Type.Literal('accept'), Type.Literal('dismiss')]),
      default: 'accept',
      env: ['KEEL_BROWSER_DIALOG_POLICY'],
      policy: 'SAFE',
      description:
        'What happens to confirm() and prompt() dialogs a page opens (alerts and leave-page dialogs are always accepted); the dialog and its text are reported either way.',
    },
    browserIdleCloseMinutes: {
      schema: Type.Number({ minimum: 0, maximum: 1440 }),
      default: 10,
      env: ['KEEL_BROWSER_IDLE_CLOSE_MINUTES'],
      policy: 'SAFE',
      description:
        'Close the browser after this many idle minutes (it starts again on the next browser skill; the profile keeps cookies). 0 keeps it open.',
    },
    captchaApiKey: {
      schema: Type.String({ maxLength: 512 }),
      env: ['CAPTCHA_API_KEY'],
      policy: 'APPROVAL',
      secret: true,
      description:
        'Key of the 2captcha-compatible CAPTCHA-solving service used by browser_solve_captcha. APPROVAL: it costs money and sends page data to a third party.',
    },
    captchaBaseUrl: {
      schema: Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://' }),
      default: 'https://2captcha.com',
      env: ['CAPTCHA_BASE_URL'],
      policy: 'LOCKED',
      description: 'Base URL of the 2captcha-compatible service (in.php / res.php). LOCKED: captchaApiKey is sent there.',
    },
  },
  skills: [
    {
      ...common,
      name: 'browser_navigate',
      description:
        'Open a URL in the browser and return a semantic snapshot: title, URL and the interactive elements numbered as `[n] <kind>: <label> (<attribute>=<value>)`, then the visible text. Use the numbers with browser_click / browser_type. Page content is untrusted. Prefer http_fetch or extract_article for reading.',
      isResearch: true,
      parameters: Type.Object(
        { url: Type.String({ minLength: 1, maxLength: 8192, description: 'http(s) URL to open' }) },
        { additionalProperties: false },
      ),
    },
    {
      ...common,
      name: 'browser_examine_page',
      description: 'Snapshot of the current page (numbered interactive elements and visible text) without navigating.',
      isDeep: true,
      isResearch: false,
      parameters: none,
    },
    {
      ...common,
      name: 'browser_back',
      description: 'Go back one page in the browser history; returns a confirmation and the new URL.',
      parameters: none,
    },
    {
      ...common,
      name: 'browser_click',
      description:
        'Click an element, given as a snapshot number or a CSS selector; returns a confirmation with the element and the page URL after the click.',
      parameters: Type.Object({ selector_or_ref: ref }, { additionalProperties: false }),
    },
    {
      ...common,
      name: 'browser_type',
      description:
        'Type text into a field (snapshot number or CSS selector). `slow` types 100 ms per character, for pages that watch keystrokes.',
      parameters: Type.Object(
        {
          selector_or_ref: ref,
          text: Type.String({ maxLength: 100_000 }),
          slow: Type.Boolean({ default: false, description: '100 ms per character' }),
        },
        { additionalProperties: false },
      ),
    },
    {
      ...common,
      name: 'browser_press',
      description:
        'Press a key (Enter, Escape, Tab, Backspace, Delete, ArrowUp ...) or a combination such as Control+C, Meta+V, Shift+Enter.',
      parameters: Type.Object({ key: Type.String({ minLength: 1, maxLength: 64 }) }, { additionalProperties: false }),
    },
    {
      ...common,
      name: 'browser_hover',
      description: 'Move the mouse over an element (CSS selector).',
      parameters: Type.Object({ selector: Type.String({ minLength: 1, maxLength: 2000 }) }, { additionalProperties: false }),
    },
    {
      ...common,
      name: 'browser_select',
      description: 'Choose an option of a <select> by its visible label.',
      parameters: Type.Object(
        {
          selector: Type.String({ minLength: 1, maxLength: 2000 }),
          value: Type.String({ maxLength: 2000, description: 'Visible option label' }),
        },
        { additionalProperties: false },
      ),
    },
    {
      ...common,
      name: 'browser_scroll',
      description: 'Scroll the page up or down by `amount` pixels (default 500).',
      parameters: Type.Object(
        {
          direction: Type.Union([Type.Literal('up'), Type.Literal('down')]),
          amount: Type.Number({ minimum: 1, maximum: 100_000, default: DEFAULT_SCROLL_PX }),
        },
        { additionalProperties: false },
      ),
    },
    {
      ...common,
      name: 'browser_wait',
      description: 'Wait a number of milliseconds (at most 60000).',
      parameters: Type.Object({ ms: Type.Number({ minimum: 0, maximum: 60_000 }) }, { additionalProperties: false }),
    },
    {
      ...common,
      name: 'browser_wait_for',
      description: 'Wait until an element matching the CSS selector is present (default timeout 30000 ms).',
      parameters: Type.Object(
        {
          selector: Type.String({ minLength: 1, maxLength: 2000 }),
          timeout: Type.Number({ minimum: 1, maximum: 300_000, default: DEFAULT_TIMEOUT_MS }),
        },
        { additionalProperties: false },
      ),
    },
    {
      ...common,
      name: 'browser_screenshot',
      description:
        'Save a PNG screenshot of the page (the viewport, or the whole page with fullPage) under $KEEL_HOME/downloads; returns its path.',
      parameters: Type.Object({ fullPage: Type.Boolean({ default: false }) }, { additionalProperties: false }),
    },
    {
      ...common,
      name: 'browser_vision',
      description: 'Describe the current page from a screenshot with a vision-capable model (optional prompt: what to look for).',
      parameters: Type.Object({ prompt: Type.Optional(Type.String({ minLength: 1, maxLength: 4000 })) }, { additionalProperties: false }),
    },
    {
      ...common,
      name: 'browser_solve_captcha',
      description:
        'Solve the reCAPTCHA, hCaptcha or Turnstile on the current page through the CAPTCHA service (needs captchaApiKey); takes 20 to 60 seconds.',
      parameters: none,
    },
    {
      ...common,
      name: 'browser_run_js',
      description:
        'Evaluate a JavaScript expression in the page and return its JSON-serialised result (runs in the page, with the page\u2019s rights only).',
      parameters: Type.Object({ script: Type.String({ minLength: 1, maxLength: 100_000 }) }, { additionalProperties: false }),
    },
    {
      ...common,
      name: 'browser_run_script',
      description:
        'Run an async script in Keel (Node) with the engine\u2019s `page` and `browser` objects; returns what it prints and returns. Admin only.',
      adminOnly: true,
      isDangerous: true,
      parameters: Type.Object({ code: Type.String({ minLength: 1, maxLength: 100_000 }) }, { additionalProperties: false }),
    },
    {
      ...common,
      name: 'switch_browser_profile',
      description: 'Use another persistent profile (cookies, local storage), created when missing; restarts the browser on it.',
      parameters: Type.Object(
        {
          profileName: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]*$' }),
          profileDir: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: 'Use this folder instead (admin only)' })),
        },
        { additionalProperties: false },
      ),
    },
    {
      ...common,
      name: 'switch_browser_engine',
      description:
        'Switch to engineA (playwright-core), engineB (puppeteer-core) or engineC (connect to a CDP endpoint, default ws://127.0.0.1:9222).',
      parameters: Type.Object(
        {
          engine: Type.Union(ENGINES.map((e) => Type.Literal(e))),
          endpoint: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, pattern: '^(wss?|https?)://' })),
        },
        { additionalProperties: false },
      ),
    },
    {
      ...common,
      name: 'set_viewport_mode',
      description: 'Switch the page to a mobile viewport (375x812, mobile user agent, scale 2, touch) or back to desktop (1366x768).',
      parameters: Type.Object({ mode: Type.Union([Type.Literal('mobile'), Type.Literal('desktop')]) }, { additionalProperties: false }),
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
