/**
 * What both engine drivers share: page-side helpers (typed loosely: this project compiles without the DOM
 * library), key names, the browser-level request guard on a CDP session, and small event-safety helpers.
 */
import { errorsFor } from '../../../../sdk/errors.js';
import type { LaunchOptions } from '../driver.js';
import { errorMessage } from '../../../../sdk/errors.js';

const coded = errorsFor('browser');

export const XHR_TYPES = new Set(['xhr', 'fetch']);

export type PageOption = { label: string; textContent: string | null; value: string };
export type PageElement = {
  tagName: string;
  options?: ArrayLike<PageOption>;
  value?: unknown;
  isContentEditable?: boolean;
  setSelectionRange?: (start: number, end: number) => void;
  ownerDocument: { activeElement: unknown; getSelection(): { selectAllChildren(n: unknown): void; collapseToEnd(): void } | null };
  contains(o: unknown): boolean;
  shadowRoot: { activeElement: unknown } | null;
};

/**
 * Whether the element (or something inside it) has the focus, after focus(); a focused text field gets its caret
 * at the end so typing appends (focus() alone leaves it at the start). `end: false`: the field has no selection
 * API (email, number inputs), press End instead.
 */
export const FOCUS_END = (el: PageElement): { focused: boolean; end: boolean } => {
  const doc = el.ownerDocument;
  const a = doc.activeElement;
  const focused = !!a && (a === el || el.contains(a) || (el.shadowRoot !== null && !!el.shadowRoot.activeElement));
  if (a !== el) return { focused, end: true };
  try {
    if (typeof el.value === 'string' && el.setSelectionRange) el.setSelectionRange(el.value.length, el.value.length);
    else if (el.isContentEditable) {
      const sel = doc.getSelection();
      if (sel) {
        sel.selectAllChildren(el);
        sel.collapseToEnd();
      }
    }
    return { focused, end: true };
  } catch {
    return { focused, end: el.tagName !== 'INPUT' };
  }
};

const MODIFIERS: Record<string, string> = {
  ctrl: 'Control',
  control: 'Control',
  cmd: 'Meta',
  command: 'Meta',
  meta: 'Meta',
  super: 'Meta',
  win: 'Meta',
  alt: 'Alt',
  option: 'Alt',
  shift: 'Shift',
  controlormeta: process.platform === 'darwin' ? 'Meta' : 'Control',
};
const KEY_NAMES: Record<string, string> = Object.fromEntries(
  [
    'Enter',
    'Escape',
    'Tab',
    'Backspace',
    'Delete',
    'Insert',
    'Home',
    'End',
    'PageUp',
    'PageDown',
    'ArrowUp',
    'ArrowDown',
    'ArrowLeft',
    'ArrowRight',
    'Space',
    'CapsLock',
    'ContextMenu',
    ...Array.from({ length: 12 }, (_, i) => `F${i + 1}`),
  ].map((k) => [k.toLowerCase(), k]),
);
Object.assign(KEY_NAMES, {
  esc: 'Escape',
  return: 'Enter',
  del: 'Delete',
  up: 'ArrowUp',
  down: 'ArrowDown',
  left: 'ArrowLeft',
  right: 'ArrowRight',
  pgup: 'PageUp',
  pgdn: 'PageDown',
});

/** `ctrl+shift+enter` → [Control, Shift] and Enter; a lone `+` (or a trailing `++`) is the plus key. */
export function splitKey(key: string): { modifiers: string[]; key: string } {
  const parts: string[] = [];
  let rest = key.trim();
  while (rest) {
    const i = rest.indexOf('+', 1);
    if (i < 0) {
      parts.push(rest);
      break;
    }
    parts.push(rest.slice(0, i));
    rest = rest.slice(i + 1);
  }
  const last = parts.pop();
  if (last === undefined) throw coded('KEEL_E_INVALID_ARGUMENT', 'empty key');
  const modifiers = parts.map((p) => MODIFIERS[p.trim().toLowerCase()] ?? p.trim());
  const lower = last.trim().toLowerCase();
  return { modifiers, key: MODIFIERS[lower] ?? KEY_NAMES[lower] ?? (last.trim() || last) };
}

/** What guardRequests needs of a CDP session (playwright's and puppeteer's both have it). */
export interface FetchSession {
  on(event: 'Fetch.requestPaused', fn: (e: { requestId: string; request: { url: string }; resourceType: string }) => void): unknown;
  send(method: string, params?: object): Promise<unknown>;
}

/**
 * Puts every request of the browser through `filter` on a browser-level CDP session (Fetch domain, request
 * stage): pages, popups, frames, workers and each hop of a redirect. A filter that throws or rejects blocks.
 */
export async function guardRequests(session: FetchSession, filter: NonNullable<LaunchOptions['filter']>): Promise<void> {
  session.on('Fetch.requestPaused', (e) => {
    void (async () => {
      let reason: string | undefined | null;
      try {
        reason = await filter(e.request.url, e.resourceType.toLowerCase());
      } catch (err) {
        reason = `the request filter failed: ${errorMessage(err)}`;
      }
      const blocked = reason !== undefined && reason !== null;
      await (blocked
        ? session.send('Fetch.failRequest', { requestId: e.requestId, errorReason: 'BlockedByClient' })
        : session.send('Fetch.continueRequest', { requestId: e.requestId })
      ).catch(() => undefined); // the browser or the request went away meanwhile
    })();
  });
  await session.send('Fetch.enable', { patterns: [{ urlPattern: '*', requestStage: 'Request' }] });
}

/**
 * After a navigation failed at the network level (blocked, refused, unresolvable), Chromium commits its error page
 * a moment later; waiting for it (at most a second) keeps that late commit from interrupting the next navigation.
 */
export async function settleAfterFailedNavigation(e: unknown, currentUrl: () => string): Promise<void> {
  if (!/net::ERR_(?!ABORTED)/.test(errorMessage(e))) return;
  const deadline = Date.now() + 1000;
  while (Date.now() < deadline && !currentUrl().startsWith('chrome-error:')) await new Promise((r) => setTimeout(r, 20));
}

/** Runs a listener so that its failure cannot break the browser's event stream. */
export function safely(fn: () => void): void {
  try {
    fn();
  } catch {
    // a listener's failure is its own
  }
}
