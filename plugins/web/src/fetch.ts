/**
 * The guarded fetch behind `http_fetch`, `extract_article` and the `web` capability (rag_ingest_url).
 *
 * - Only http: and https: URLs; GET only; no cookies or credentials are ever sent.
 * - SSRF guard: unless `allowPrivate`, a literal IP host is checked as the URL parser normalised it (so
 *   2130706433, 0x7f000001, 0177.0.0.1 and [::ffff:127.0.0.1] are all seen as 127.0.0.1), and a host name is
 *   resolved inside the socket's own `lookup`: every address DNS returns is checked, any bad one refuses the
 *   request, and the socket connects only to the addresses that were checked. There is no second resolution
 *   between the check and the connection, so DNS rebinding cannot slip a private address in.
 * - Redirects are followed by hand (at most `maxRedirects`), each hop going through the same guard.
 * - One deadline (`timeoutMs`) covers the whole fetch, redirects and body included; the caller's signal aborts too.
 * - The body is decompressed (gzip, deflate, br) and cut at `maxBytes` decoded bytes (`truncated: true`), then
 *   decoded with the charset of the Content-Type, a byte-order mark or an HTML `<meta charset>`, else UTF-8.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage, type ClientRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { Readable } from 'node:stream';
import { TextDecoder } from 'node:util';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { blockedReason } from './address.js';
import { PluginError } from '../../../sdk/errors.js';
import { linkSignals } from '../../../sdk/retry.js';

export interface FetchSettings {
  allowPrivate: boolean;
  timeoutMs: number;
  maxBytes: number;
  maxRedirects: number;
  userAgent: string;
  /** Test seams: the address check (default blockedReason) and the resolver (default dns.lookup, all addresses). */
  isBlocked?: (ip: string) => string | undefined;
  resolve?: (hostname: string, family: number) => Promise<LookupAddress[]>;
}

export interface FetchOptions {
  signal?: AbortSignal;
  maxBytes?: number;
  accept?: string;
}

export interface FetchResult {
  url: string;
  status: number;
  contentType: string;
  body: string;
  truncated: boolean;
}

export type WebErrorCode =
  | 'KEEL_E_WEB_REFUSED'
  | 'KEEL_E_WEB_BAD_URL'
  | 'KEEL_E_WEB_TIMEOUT'
  | 'KEEL_E_WEB_REDIRECTS'
  | 'KEEL_E_WEB_ABORTED'
  | 'KEEL_E_WEB_NETWORK';

/** Every failure of a web fetch; `code` tells the kind. */
export class WebFetchError extends PluginError<WebErrorCode> {
  constructor(code: WebErrorCode, message: string) {
    super(code, message);
    this.name = 'WebFetchError';
  }
}

const DEFAULT_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,text/plain;q=0.8,*/*;q=0.5';
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

function refusal(url: string, host: string, address: string, reason: string): WebFetchError {
  const via = host === address ? `${address} is` : `${host} resolves to ${address},`;
  return new WebFetchError(
    'KEEL_E_WEB_REFUSED',
    `Refused to fetch ${url}: ${via} ${/^[aeiou]/i.test(reason) ? 'an' : 'a'} ${reason} address. Requests to loopback, private, link-local and other non-public addresses are blocked (webAllowPrivateNetwork is false).`,
  );
}

/** A socket `lookup` that resolves every address, refuses the host if any is non-public, and hands back only what it checked. */
function vettedLookup(url: string, settings: FetchSettings): LookupFunction {
  const check = settings.isBlocked ?? blockedReason;
  return (hostname, options, callback) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : (options.family ?? 0);
    const resolved = settings.resolve
      ? settings.resolve(hostname, family)
      : new Promise<LookupAddress[]>((resolve, reject) =>
          dnsLookup(hostname, { all: true, family, ...(options.hints ? { hints: options.hints } : {}) }, (err, a) =>
            err ? reject(err) : resolve(a),
          ),
        );
    resolved.then(
      (addresses) => {
        if (!addresses.length) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
        if (!settings.allowPrivate) {
          for (const a of addresses) {
            const reason = check(a.address);
            if (reason) return callback(refusal(url, hostname, a.address, reason), '', 0);
          }
        }
        if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
        const first = addresses[0]!;
        return callback(null, first.address, first.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, '', 0),
    );
  };
}

/** Parses and checks one URL (scheme, literal IP). */
function checkUrl(raw: string, settings: FetchSettings): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new WebFetchError('KEEL_E_WEB_BAD_URL', `Not a valid URL: ${JSON.stringify(raw.slice(0, 200))}.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new WebFetchError(
      'KEEL_E_WEB_BAD_URL',
      `Refused to fetch ${url.href.slice(0, 200)}: only http and https URLs can be fetched, not ${url.protocol.replace(/:$/, '')}.`,
    );
  }
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (!host) throw new WebFetchError('KEEL_E_WEB_BAD_URL', `Refused to fetch ${url.href}: the URL has no host.`);
  if (!settings.allowPrivate && isIP(host)) {
    const reason = (settings.isBlocked ?? blockedReason)(host);
    if (reason) throw refusal(url.href, host, host, reason);
  }
  return url;
}

function header(res: IncomingMessage, name: string): string {
  const v = res.headers[name];
  return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
}

/** Sends one GET and resolves with the response head. */
function requestOnce(
  url: URL,
  settings: FetchSettings,
  accept: string,
  signal: AbortSignal,
): Promise<{ req: ClientRequest; res: IncomingMessage }> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const req = send({
      protocol: url.protocol,
      hostname: host,
      ...(url.port ? { port: Number(url.port) } : {}),
      path: `${url.pathname}${url.search}`,
      method: 'GET',
      // A fresh connection per request: no pooled socket to some other address is ever reused.
      agent: false,
      lookup: vettedLookup(url.href, settings),
      signal,
      headers: {
        'user-agent': settings.userAgent,
        accept,
        'accept-encoding': 'gzip, deflate, br',
        'accept-language': 'en;q=1.0, *;q=0.5',
      },
    });
    req.once('response', (res) => resolve({ req, res }));
    req.once('error', reject);
    req.end();
  });
}

function decoded(res: IncomingMessage): Readable {
  const enc = header(res, 'content-encoding').trim().toLowerCase();
  if (enc === 'gzip' || enc === 'x-gzip') return res.pipe(createGunzip());
  if (enc === 'deflate') return res.pipe(createInflate());
  if (enc === 'br') return res.pipe(createBrotliDecompress());
  return res;
}

/** Reads at most `maxBytes` decoded bytes. */
async function readCapped(res: IncomingMessage, maxBytes: number): Promise<{ bytes: Buffer; truncated: boolean }> {
  const stream = decoded(res);
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (size + chunk.length > maxBytes) {
        chunks.push(chunk.subarray(0, maxBytes - size));
        size = maxBytes;
        truncated = true;
        break;
      }
      chunks.push(chunk);
      size += chunk.length;
    }
  } finally {
    if (stream !== res) stream.destroy();
    res.destroy();
  }
  return { bytes: Buffer.concat(chunks, size), truncated };
}

function labelOf(contentType: string): string | undefined {
  const m = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType);
  return m?.[1];
}

/** Picks the charset: byte-order mark, Content-Type, `<meta charset>` of an HTML page, else UTF-8. */
export function decodeBody(bytes: Buffer, contentType: string): string {
  let label: string | undefined;
  let skip = 0;
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) (label = 'utf-8'), (skip = 3);
  else if (bytes[0] === 0xfe && bytes[1] === 0xff) (label = 'utf-16be'), (skip = 2);
  else if (bytes[0] === 0xff && bytes[1] === 0xfe) (label = 'utf-16le'), (skip = 2);
  label ??= labelOf(contentType);
  if (!label && /html|xml/i.test(contentType)) {
    const head = bytes.subarray(0, 4096).toString('latin1');
    label =
      /<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)/i.exec(head)?.[1] ??
      (/xml/i.test(contentType) ? /<\?xml[^>]+encoding\s*=\s*["']([\w.:-]+)/i.exec(head)?.[1] : undefined);
  }
  let decoder: TextDecoder;
  try {
    decoder = new TextDecoder(label ?? 'utf-8', { ignoreBOM: true });
  } catch {
    decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  }
  // WHATWG maps latin1, iso-8859-1, ascii and cp1252 to windows-1252; Node decodes them as plain latin1, which
  // turns the curly quotes, dashes and euro sign of 0x80..0x9F into control characters.
  if (decoder.encoding === 'windows-1252') return decodeWindows1252(bytes.subarray(skip));
  return decoder.decode(bytes.subarray(skip));
}

// prettier-ignore
const CP1252_HIGH = [
  0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021, 0x2c6, 0x2030, 0x160, 0x2039, 0x152, 0x8d, 0x17d, 0x8f, 0x90, 0x2018, 0x2019,
  0x201c, 0x201d, 0x2022, 0x2013, 0x2014, 0x2dc, 0x2122, 0x161, 0x203a, 0x153, 0x9d, 0x17e, 0x178,
];

function decodeWindows1252(bytes: Buffer): string {
  const s = bytes.toString('latin1');
  return /[\x80-\x9f]/.test(s) ? s.replace(/[\x80-\x9f]/g, (c) => String.fromCharCode(CP1252_HIGH[c.charCodeAt(0) - 0x80]!)) : s;
}

/** GET `raw` through the SSRF guard, following redirects. Throws WebFetchError. */
export async function guardedFetch(raw: string, settings: FetchSettings, opts: FetchOptions = {}): Promise<FetchResult> {
  const maxBytes = Math.max(1, Math.floor(opts.maxBytes ?? settings.maxBytes));
  const deadline = AbortSignal.timeout(settings.timeoutMs);
  const link = linkSignals([deadline, opts.signal]);
  try {
    return await fetchLinked(raw, settings, opts, maxBytes, deadline, link.signal);
  } finally {
    link.dispose();
  }
}

async function fetchLinked(
  raw: string,
  settings: FetchSettings,
  opts: FetchOptions,
  maxBytes: number,
  deadline: AbortSignal,
  signal: AbortSignal,
): Promise<FetchResult> {
  const accept = opts.accept ?? DEFAULT_ACCEPT;
  const start = raw;
  let url = checkUrl(raw, settings);
  let redirects = 0;
  const failed = (e: unknown): WebFetchError => {
    if (e instanceof WebFetchError) return e;
    if (deadline.aborted)
      return new WebFetchError('KEEL_E_WEB_TIMEOUT', `Fetching ${url.href} timed out after ${settings.timeoutMs} ms (webFetchTimeoutMs).`);
    if (opts.signal?.aborted) return new WebFetchError('KEEL_E_WEB_ABORTED', `Fetching ${url.href} was cancelled.`);
    const err = e as NodeJS.ErrnoException;
    const code = err?.code ? `${err.code}: ` : '';
    return new WebFetchError('KEEL_E_WEB_NETWORK', `Fetching ${url.href} failed: ${code}${err?.message ?? String(e)}`);
  };
  for (;;) {
    if (signal.aborted) throw failed(signal.reason);
    let req: ClientRequest;
    let res: IncomingMessage;
    try {
      ({ req, res } = await requestOnce(url, settings, accept, signal));
    } catch (e) {
      throw failed(e);
    }
    const status = res.statusCode ?? 0;
    const location = header(res, 'location');
    if (REDIRECTS.has(status) && location) {
      res.destroy();
      req.destroy();
      redirects += 1;
      if (redirects > settings.maxRedirects) {
        throw new WebFetchError(
          'KEEL_E_WEB_REDIRECTS',
          `Too many redirects fetching ${start}: more than ${settings.maxRedirects} (webMaxRedirects); the last one pointed to ${location.slice(0, 200)}.`,
        );
      }
      let next: string;
      try {
        next = new URL(location, url).href;
      } catch {
        throw new WebFetchError(
          'KEEL_E_WEB_BAD_URL',
          `${url.href} redirected to an invalid URL: ${JSON.stringify(location.slice(0, 200))}.`,
        );
      }
      url = checkUrl(next, settings);
      continue;
    }
    const onAbort = () => res.destroy();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const { bytes, truncated } = await readCapped(res, maxBytes);
      if (signal.aborted) throw signal.reason;
      const contentType = header(res, 'content-type');
      return { url: url.href, status, contentType, body: decodeBody(bytes, contentType), truncated };
    } catch (e) {
      throw failed(e);
    } finally {
      signal.removeEventListener('abort', onAbort);
      req.destroy();
    }
  }
}
