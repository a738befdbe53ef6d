import { errorMessage, errorsFor } from '../../../sdk/errors.js';
import { withLinkedSignal } from '../../../sdk/retry.js';

/**
 * `web_search` over two search APIs: searchA (Serper, Google results: POST {base}/search with X-API-KEY) and
 * searchB (Brave Search: GET {base}/res/v1/web/search with X-Subscription-Token). With both keys set both are
 * asked at once; the results are merged in `searchProviderOrder` (rank by rank, alternating), deduplicated by
 * canonical URL with every provider that returned a result noted, and the answer is given by the deadline even
 * when one provider is slow or failing (its failure is noted). Answers are cached for a short while.
 */

const coded = errorsFor('web');

export type SearchProvider = 'searchA' | 'searchB';
export const SEARCH_PROVIDERS: readonly SearchProvider[] = ['searchA', 'searchB'];

export interface SearchSettings {
  keys: Partial<Record<SearchProvider, string>>;
  baseUrls: Record<SearchProvider, string>;
  order: SearchProvider[];
  timeoutMs: number;
}

export interface SearchHit {
  title: string;
  url: string;
  snippet: string;
  providers: SearchProvider[];
}

export interface SearchOutcome {
  hits: SearchHit[];
  /** Providers that answered, and those that failed or missed the deadline (with why). */
  answered: SearchProvider[];
  failed: Array<{ provider: SearchProvider; reason: string }>;
}

export class SearchError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'SearchError';
  }
}

const TRACKING_PARAMS = /^(utm_\w+|gclid|fbclid|msclkid|mc_cid|mc_eid|ref_src|igshid|_ga)$/i;

/**
 * The form two URLs of the same page share: lower-case host without `www.`, default port dropped, no fragment,
 * no tracking parameters, the other parameters sorted, no trailing slash; http and https count as one.
 */
export function canonicalUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return raw.trim();
  }
  const host = u.hostname.toLowerCase().replace(/^www\./, '');
  const port = u.port && !['80', '443'].includes(u.port) ? `:${u.port}` : '';
  const params = [...u.searchParams.entries()].filter(([k]) => !TRACKING_PARAMS.test(k)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const query = params.length ? `?${new URLSearchParams(params).toString()}` : '';
  const path = u.pathname.replace(/\/+$/, '') || '';
  return `${host}${port}${path}${query}`;
}

/** The providers that have a key, in the configured order (those missing from the order come last). */
export function activeProviders(s: Pick<SearchSettings, 'keys' | 'order'>): SearchProvider[] {
  const order = [...new Set([...s.order.filter((p) => SEARCH_PROVIDERS.includes(p)), ...SEARCH_PROVIDERS])];
  return order.filter((p) => Boolean(s.keys[p]));
}

/** Why a provider failed, never with its key in it. */
function scrub(text: string, key: string): string {
  return key ? text.split(key).join('***') : text;
}

async function callProvider(
  p: SearchProvider,
  query: string,
  count: number,
  s: SearchSettings,
  signal: AbortSignal,
): Promise<Array<Omit<SearchHit, 'providers'>>> {
  const key = s.keys[p]!;
  const base = s.baseUrls[p].replace(/\/+$/, '');
  let res: Response;
  try {
    res =
      p === 'searchA'
        ? await fetch(`${base}/search`, {
            method: 'POST',
            headers: { 'X-API-KEY': key, 'Content-Type': 'application/json', Accept: 'application/json' },
            body: JSON.stringify({ q: query, num: count }),
            signal,
          })
        : await fetch(`${base}/res/v1/web/search?${new URLSearchParams({ q: query, count: String(Math.min(count, 20)) })}`, {
            headers: { 'X-Subscription-Token': key, Accept: 'application/json' },
            signal,
          });
  } catch (e) {
    if (signal.aborted) throw coded('KEEL_E_WEB_TIMEOUT', 'no answer before the deadline');
    throw coded(
      'KEEL_E_PROVIDER_FAILED',
      scrub(`unreachable (${e instanceof Error ? ((e.cause as Error | undefined)?.message ?? e.message) : String(e)})`, key),
    );
  }
  const body = await res.text().catch(() => '');
  if (res.status === 401 || res.status === 403)
    throw coded('KEEL_E_PROVIDER_FAILED', `HTTP ${res.status}: the API key was refused (check ${p}ApiKey)`);
  if (res.status === 429) throw coded('KEEL_E_PROVIDER_FAILED', 'HTTP 429: rate limited or out of quota');
  if (!res.ok)
    throw coded('KEEL_E_PROVIDER_FAILED', scrub(`HTTP ${res.status}${body ? `: ${body.slice(0, 200).replace(/\s+/g, ' ')}` : ''}`, key));
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw coded('KEEL_E_PROVIDER_FAILED', 'the answer is not JSON');
  }
  const rows =
    p === 'searchA'
      ? ((json as { organic?: Array<{ title?: string; link?: string; snippet?: string }> }).organic ?? []).map((r) => ({
          title: r.title,
          url: r.link,
          snippet: r.snippet,
        }))
      : ((json as { web?: { results?: Array<{ title?: string; url?: string; description?: string }> } }).web?.results ?? []).map((r) => ({
          title: r.title,
          url: r.url,
          snippet: r.description,
        }));
  return rows
    .filter(
      (r): r is { title: string | undefined; url: string; snippet: string | undefined } =>
        typeof r.url === 'string' && /^https?:\/\//i.test(r.url),
    )
    .map((r) => ({ title: stripTags(r.title ?? r.url), url: r.url, snippet: stripTags(r.snippet ?? '') }));
}

/** Brave marks query words with <strong>; the model reads plain text. */
function stripTags(s: string): string {
  return s
    .replace(/<\/?[a-z][^>]*>/gi, '')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * Asks every provider that has a key at once and merges what arrived by the deadline. Throws when none
 * answered (with each provider's reason).
 */
export async function search(query: string, maxResults: number, s: SearchSettings, signal?: AbortSignal): Promise<SearchOutcome> {
  const providers = activeProviders(s);
  if (providers.length === 0) throw new SearchError('KEEL_E_PLUGIN_ENVIRONMENT', noKeyMessage());
  const settled = await withLinkedSignal([AbortSignal.timeout(s.timeoutMs), signal], (deadline) =>
    Promise.all(
      providers.map((p) =>
        callProvider(p, query, maxResults, s, deadline).then(
          (rows) => ({ p, rows }),
          (e: unknown) => ({ p, error: errorMessage(e) }),
        ),
      ),
    ),
  );
  if (signal?.aborted) throw new SearchError('KEEL_E_WEB_ABORTED', 'The search was cancelled.');
  const failed = settled.flatMap((r) => ('error' in r ? [{ provider: r.p, reason: r.error }] : []));
  const lists = settled.flatMap((r) => ('rows' in r ? [{ p: r.p, rows: r.rows }] : []));
  if (lists.length === 0) {
    throw new SearchError(
      'KEEL_E_WEB_NETWORK',
      `No search provider answered: ${failed.map((f) => `${f.provider}: ${f.reason}`).join('; ')}.`,
    );
  }
  const byCanon = new Map<string, SearchHit>();
  const hits: SearchHit[] = [];
  const longest = Math.max(...lists.map((l) => l.rows.length));
  for (let i = 0; i < longest; i++) {
    for (const { p, rows } of lists) {
      const r = rows[i];
      if (!r) continue;
      const c = canonicalUrl(r.url);
      const seen = byCanon.get(c);
      if (seen) {
        if (!seen.providers.includes(p)) seen.providers.push(p);
        if (!seen.snippet && r.snippet) seen.snippet = r.snippet;
        continue;
      }
      const hit = { ...r, providers: [p] };
      byCanon.set(c, hit);
      hits.push(hit);
    }
  }
  return { hits: hits.slice(0, maxResults), answered: lists.map((l) => l.p), failed };
}

/** web_search's state without a key, as `GET /api/skills` and the dashboard show it. */
export const NEEDS_KEY = 'needs searchAApiKey or searchBApiKey';

export function noKeyMessage(): string {
  return 'web_search needs a search API key: set searchAApiKey (Serper, env SEARCHA_API_KEY) or searchBApiKey (Brave Search, env SEARCHB_API_KEY), or both. Meanwhile http_fetch and extract_article read a known URL.';
}

/** The result as the model reads it. */
export function renderSearch(query: string, o: SearchOutcome): string {
  const lines = [`[untrusted search results for ${JSON.stringify(query)} from ${o.answered.join(' and ')}]`];
  if (o.failed.length) lines.push(`(${o.failed.map((f) => `${f.provider} failed: ${f.reason}`).join('; ')})`);
  if (o.hits.length === 0) lines.push('No results.');
  o.hits.forEach((h, i) => {
    lines.push('', `${i + 1}. ${h.title}`, `   ${h.url}`, ...(h.snippet ? [`   ${h.snippet}`] : []), `   (from ${h.providers.join(', ')})`);
  });
  return lines.join('\n');
}

/** A small time-limited cache of rendered answers. */
export class SearchCache {
  private readonly entries = new Map<string, { at: number; value: string }>();
  constructor(private readonly max = 200) {}

  get(key: string, ttlMs: number): string | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (Date.now() - e.at >= ttlMs) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  set(key: string, value: string): void {
    this.entries.delete(key);
    this.entries.set(key, { at: Date.now(), value });
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }
}
