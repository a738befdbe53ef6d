/**
 * Ad and tracker blocking: requests to these hosts (or their subdomains) never leave the browser. A short list of
 * the largest ad and analytics networks, not a full filter list: it saves time and bandwidth on most pages and
 * keeps the common beacons out; docs/browser.md says so.
 */
export const TRACKER_HOSTS = [
  'doubleclick.net', 'googlesyndication.com', 'googleadservices.com', 'google-analytics.com', 'googletagmanager.com',
  'googletagservices.com', 'adservice.google.com', 'connect.facebook.net', 'facebook.com/tr', 'scorecardresearch.com',
  'quantserve.com', 'adnxs.com', 'criteo.com', 'criteo.net', 'taboola.com', 'outbrain.com', 'hotjar.com', 'hotjar.io',
  'cdn.segment.com', 'api.segment.io', 'mixpanel.com', 'amazon-adsystem.com', 'ads-twitter.com', 'analytics.twitter.com',
  'bat.bing.com', 'clarity.ms', 'adsrvr.org', 'rubiconproject.com', 'pubmatic.com', 'openx.net', 'moatads.com',
  'chartbeat.com', 'chartbeat.net', 'nr-data.net', 'adroll.com', 'casalemedia.com', 'yieldmo.com', 'media.net',
  'zedo.com', 'serving-sys.com', 'advertising.com', 'smartadserver.com', 'teads.tv', 'sharethrough.com',
] as const;

const hosts = new Set(TRACKER_HOSTS.filter((h) => !h.includes('/')));
const paths = TRACKER_HOSTS.filter((h) => h.includes('/'));

/** True when the URL's host is a listed tracker host or a subdomain of one. */
export function isTracker(url: string): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  let h = u.hostname.toLowerCase();
  for (;;) {
    if (hosts.has(h)) return true;
    const dot = h.indexOf('.');
    if (dot < 0) break;
    h = h.slice(dot + 1);
  }
  const hp = `${u.hostname.toLowerCase().replace(/^www\./, '')}${u.pathname}`;
  return paths.some((p) => hp.startsWith(p));
}
