/**
 * Opening a page: the address checks, the page state (ok, blank, network error, HTTP error, bot challenge or
 * CAPTCHA, login wall, download), blank-page recovery (at most 3 attempts) and SPEC's circuit breaker, then the
 * snapshot within its budget.
 */
import { BlankPageBreaker, MAX_RECOVERY } from './breaker.js';
import type { BrowserDriver, SideEffect } from './driver.js';
import { BrowserError, CRASH_MESSAGE, type BrowserService } from './service.js';
import type { PageSnapshot } from './snapshot.js';
import { displayAvailable } from './xvfb.js';

/**
 * Opens a URL: the page state (ok, blank, network error, HTTP error, bot challenge or CAPTCHA, login wall,
 * download), the snapshot, blank-page recovery (at most 3 attempts) and the circuit breaker.
 */
export async function navigate(svc: BrowserService, url: string): Promise<{ text: string }> {
  svc.resetContinuation();
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new BrowserError(`Not a valid URL: ${url.slice(0, 200)}. Give an absolute http(s) URL.`, 'KEEL_E_BROWSER_BAD_URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new BrowserError(`Only http and https URLs can be opened; got ${u.protocol}`, 'KEEL_E_BROWSER_BAD_URL');
  const why = await svc.refusal(u.href, 'document');
  if (why)
    throw new BrowserError(
      `Refused to open ${u.href}: ${why === 'tracker' ? 'it is a known ad/tracker host (browserBlockTrackers)' : why}.`,
      'KEEL_E_BROWSER_REFUSED',
    );
  const d = await svc.page();
  svc.effects.length = 0;
  let status: number | undefined;
  let failure: string | undefined;
  try {
    const nav = await d.goto(u.href, svc.timeoutMs());
    status = nav.status;
  } catch (e) {
    failure = e instanceof Error ? e.message.split('\n')[0] : String(e);
  }
  // a URL that is a file: the navigation is aborted and a download starts
  await new Promise((r) => setTimeout(r, failure ? 300 : 0));
  const deadline = Date.now() + svc.timeoutMs();
  while (d.pendingDownloads() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const downloads = svc.effects.filter((e): e is Extract<SideEffect, { kind: 'download' }> => e.kind === 'download');
  if (downloads.length) {
    const dl = downloads[0]!;
    svc.lastUrl = d.url();
    return {
      text: `State: download\nURL: ${u.href}\nThe URL is a file: saved to ${dl.path} (${dl.size} bytes). The page stays at ${d.url()}.`,
    };
  }
  if (failure) {
    if (svc.dead()) throw new BrowserError(CRASH_MESSAGE, 'KEEL_E_BROWSER_CRASHED');
    svc.lastUrl = d.url();
    const blocked = /ERR_BLOCKED_BY_CLIENT/.test(failure);
    throw new BrowserError(
      `State: network error\nCould not open ${u.href}: ${failure}${blocked ? ' (a request of the redirect chain was refused: a non-public address or a tracker)' : ''}. Check the address, or try http_fetch.`,
      'KEEL_E_BROWSER_NAVIGATION',
    );
  }
  svc.lastUrl = d.url();
  let snap = await svc.snapshot(d);
  let recovered = 0;
  const notes: string[] = [];
  while (snap.blank && recovered < MAX_RECOVERY) {
    recovered++;
    await new Promise((r) => setTimeout(r, 300 * recovered));
    if (recovered > 1) await d.reload(svc.timeoutMs()).catch(() => undefined);
    snap = await svc.snapshot(d);
  }
  let state = await classify(d, snap, status);
  if (snap.blank) {
    state = 'blank';
    notes.push(`The page stayed blank after ${recovered} recovery attempts. Cause: blocked automation or a failed render.`);
    if (svc.breaker.blank(svc.lastUrl)) {
      const domain = BlankPageBreaker.domainOf(svc.lastUrl);
      if (displayAvailable()) {
        await svc.goHeadful();
        notes.push(
          `${domain} gave ${svc.breaker.count(svc.lastUrl)} blank pages in a row: the browser now runs headful (with a window); navigate again. A fresh profile (switch_browser_profile) also helps.`,
        );
      } else {
        notes.push(
          `${domain} gave ${svc.breaker.count(svc.lastUrl)} blank pages in a row: headful mode is next, but it needs a display and there is none (DISPLAY is not set and Xvfb is not installed: apt-get install xvfb). Try a fresh profile (switch_browser_profile).`,
        );
      }
    } else notes.push('Retry headful or use a fresh profile (switch_browser_profile).');
  } else svc.breaker.success(svc.lastUrl);
  // "ok" with a 200 goes without saying (no State line); any other state or status is said
  const stateLine = `State: ${state}${status !== undefined && status !== 200 ? ` (HTTP ${status})` : ''}`;
  const header = [...(stateLine === 'State: ok' ? [] : [stateLine]), ...notes.map((n) => `Note: ${n}`), ...stateAdvice(state)];
  return { text: svc.render(snap, header) };
}

async function classify(d: BrowserDriver, snap: PageSnapshot, status: number | undefined): Promise<string> {
  const challenge = await d
    .evaluate<boolean>(
      String.raw`() => {
        const t = (document.title + ' ' + (document.body ? document.body.innerText.slice(0, 2000) : '')).toLowerCase();
        if (document.querySelector('.g-recaptcha, .h-captcha, .cf-turnstile, iframe[src*="recaptcha"], iframe[src*="hcaptcha"], iframe[src*="challenges.cloudflare.com"], #challenge-form, #cf-challenge-running')) return true;
        return /just a moment|attention required|verify (that )?you are (a )?human|are you a robot|unusual traffic|captcha/.test(t);
      }`,
    )
    .catch(() => false);
  if (challenge) return 'bot challenge or CAPTCHA';
  const login =
    snap.hasPassword && (/log\s?in|sign\s?in|anmelden|connexion/i.test(`${snap.title} ${snap.url}`) || status === 401 || status === 403);
  if (login) return 'login wall';
  if (status !== undefined && status >= 400) return 'HTTP error';
  return 'ok';
}

function stateAdvice(state: string): string[] {
  if (state === 'bot challenge or CAPTCHA')
    return [
      'Note: CAPTCHA blocked navigation: call browser_solve_captcha (needs captchaApiKey), or use a clean profile (switch_browser_profile).',
    ];
  if (state === 'login wall') return ['Note: the page asks to sign in; the content behind it is not shown.'];
  if (state === 'HTTP error') return ['Note: the server answered with an error status; the page shown is its error page.'];
  return [];
}
