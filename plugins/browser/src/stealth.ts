/**
 * Stealth settings of SPEC: the automation flag removed (`--disable-blink-features=AutomationControlled` plus
 * this init script), realistic desktop and mobile user agents, and the small tells headless Chromium leaves.
 */
import type { Viewport } from './driver.js';

const CHROME = '150.0.0.0';
export const DESKTOP_UA = `Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${CHROME} Safari/537.36`;
export const MOBILE_UA = `Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${CHROME} Mobile Safari/537.36`;

export const DESKTOP: Viewport = {
  width: 1366,
  height: 768,
  deviceScaleFactor: 1,
  isMobile: false,
  hasTouch: false,
  userAgent: DESKTOP_UA,
};
/** SPEC: 375x812, mobile user agent, device scale factor 2, touch events on. */
export const MOBILE: Viewport = { width: 375, height: 812, deviceScaleFactor: 2, isMobile: true, hasTouch: true, userAgent: MOBILE_UA };

/** Runs before every page's own scripts. */
export const STEALTH_SCRIPT = `(() => {
  try { Object.defineProperty(Navigator.prototype, 'webdriver', { get: () => undefined, configurable: true }); } catch {}
  try { if (!navigator.languages || navigator.languages.length === 0) Object.defineProperty(Navigator.prototype, 'languages', { get: () => ['en-US', 'en'], configurable: true }); } catch {}
  try { if (navigator.plugins.length === 0) Object.defineProperty(Navigator.prototype, 'plugins', { get: () => [{ name: 'PDF Viewer', filename: 'internal-pdf-viewer' }, { name: 'Chrome PDF Viewer', filename: 'internal-pdf-viewer' }], configurable: true }); } catch {}
  try { if (!window.chrome) Object.defineProperty(window, 'chrome', { value: { runtime: {} }, configurable: true }); } catch {}
  try {
    const q = navigator.permissions && navigator.permissions.query.bind(navigator.permissions);
    if (q) navigator.permissions.query = (p) => (p && p.name === 'notifications' ? Promise.resolve({ state: Notification.permission }) : q(p));
  } catch {}
})();`;
