/**
 * web_search against loopback fakes that speak the two vendors' wire protocols: Serper (POST /search, X-API-KEY,
 * `organic`) and Brave Search (GET /res/v1/web/search, X-Subscription-Token, `web.results`). Both at once, merged
 * and deduplicated; one failing or hanging; no key (left out of the catalogue); the cache; keys never shown.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { canonicalUrl } from '../../../plugins/web/src/search.js';
import { boot, cleanup } from './harness.js';

interface Fake {
  server: Server;
  base: string;
  calls: Array<{ method: string; path: string; headers: IncomingMessage['headers']; body: string }>;
  mode: 'ok' | 'fail' | 'hang' | 'unauthorized';
}

const A_KEY = 'serper-secret-key-123';
const B_KEY = 'brave-secret-key-456';

async function fake(kind: 'serper' | 'brave'): Promise<Fake> {
  const f: Fake = { server: undefined as unknown as Server, base: '', calls: [], mode: 'ok' };
  f.server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      f.calls.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
      if (f.mode === 'hang') return; // never answers
      if (f.mode === 'fail')
        return void res
          .writeHead(500, { 'content-type': 'application/json' })
          .end(`{"message":"upstream broke","key":"${kind === 'serper' ? A_KEY : B_KEY}"}`);
      if (kind === 'serper') {
        if (req.method !== 'POST' || req.url !== '/search' || req.headers['x-api-key'] !== A_KEY)
          return void res.writeHead(403).end('{"message":"Unauthorized."}');
        const q = JSON.parse(body) as { q: string; num: number };
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            searchParameters: { q: q.q, num: q.num },
            organic: [
              {
                title: 'Shared result',
                link: 'https://www.example.com/shared/?utm_source=serper#top',
                snippet: 'from serper',
                position: 1,
              },
              { title: `Serper only about ${q.q}`, link: 'https://serper-only.example/a', snippet: 'serper snippet', position: 2 },
            ],
          }),
        );
      }
      const u = new URL(req.url ?? '/', 'http://x');
      if (req.method !== 'GET' || u.pathname !== '/res/v1/web/search' || req.headers['x-subscription-token'] !== B_KEY)
        return void res.writeHead(401).end('{}');
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          type: 'search',
          web: {
            type: 'search',
            results: [
              { title: 'Brave only', url: 'https://brave-only.example/b', description: 'a <strong>brave</strong> snippet' },
              { title: 'Shared result (brave)', url: 'http://example.com/shared', description: 'from brave' },
            ],
          },
        }),
      );
    });
  });
  await new Promise<void>((r) => f.server.listen(0, '127.0.0.1', r));
  const addr = f.server.address() as { port: number };
  f.base = `http://127.0.0.1:${addr.port}`;
  return f;
}

let serper: Fake;
let brave: Fake;
beforeAll(async () => {
  serper = await fake('serper');
  brave = await fake('brave');
});
afterAll(async () => {
  for (const f of [serper, brave]) {
    f.server.closeAllConnections();
    await new Promise((r) => f.server.close(r));
  }
});
afterEach(async () => {
  serper.mode = 'ok';
  brave.mode = 'ok';
  serper.calls.length = 0;
  brave.calls.length = 0;
  await cleanup();
});

const both = () => ({
  searchAApiKey: A_KEY,
  searchBApiKey: B_KEY,
  searchABaseUrl: serper.base,
  searchBBaseUrl: brave.base,
  searchTimeoutMs: 1500,
});

describe('web_search', () => {
  it('queries both providers at once with their own protocols, merges and deduplicates by canonical URL, noting providers', async () => {
    const { run } = await boot(both());
    const r = await run('web_search', { query: 'keel agents', maxResults: 5 });
    expect(r.success, r.result).toBe(true);
    expect(serper.calls).toHaveLength(1);
    expect(JSON.parse(serper.calls[0]!.body)).toEqual({ q: 'keel agents', num: 5 });
    expect(brave.calls).toHaveLength(1);
    expect(brave.calls[0]!.path).toBe('/res/v1/web/search?q=keel+agents&count=5');
    expect(r.result).toMatch(/^\[untrusted search results for "keel agents" from searchA and searchB\]/);
    // order: rank 1 of searchA, rank 1 of searchB, rank 2 of searchA (rank 2 of searchB is the duplicate)
    const urls = [...r.result.matchAll(/^ {3}(https?:\/\/\S+)$/gm)].map((m) => m[1]);
    expect(urls).toEqual([
      'https://www.example.com/shared/?utm_source=serper#top',
      'https://brave-only.example/b',
      'https://serper-only.example/a',
    ]);
    expect(r.result).toContain('1. Shared result\n');
    expect(r.result).toMatch(/from serper\n {3}\(from searchA, searchB\)/);
    expect(r.result).toContain('a brave snippet'); // tags stripped
    expect(r.result).not.toContain(A_KEY);
    expect(r.result).not.toContain(B_KEY);
  });

  it('follows searchProviderOrder and maxResults', async () => {
    const { run } = await boot({ ...both(), searchProviderOrder: ['searchB', 'searchA'] });
    const r = await run('web_search', { query: 'order', maxResults: 2 });
    expect(r.success, r.result).toBe(true);
    const urls = [...r.result.matchAll(/^ {3}(https?:\/\/\S+)$/gm)].map((m) => m[1]);
    expect(urls).toEqual(['https://brave-only.example/b', 'https://www.example.com/shared/?utm_source=serper#top']);
  });

  it('answers with the other provider when one fails, naming the failure without its key', async () => {
    brave.mode = 'fail';
    const { run } = await boot(both());
    const r = await run('web_search', { query: 'one fails' });
    expect(r.success, r.result).toBe(true);
    expect(r.result).toContain('from searchA]');
    expect(r.result).toMatch(/searchB failed: HTTP 500/);
    expect(r.result).toContain('https://serper-only.example/a');
    expect(r.result).not.toContain(B_KEY);
  });

  it('answers by the deadline when one provider hangs', async () => {
    serper.mode = 'hang';
    const { run } = await boot({ ...both(), searchTimeoutMs: 600 });
    const r = await run('web_search', { query: 'one hangs' });
    expect(r.success, r.result).toBe(true);
    expect(r.result).toMatch(/searchA failed: no answer before the deadline/);
    expect(r.result).toContain('https://brave-only.example/b');
  });

  it('fails clearly when every provider fails, and reports a refused key', async () => {
    serper.mode = 'fail';
    brave.mode = 'fail';
    const { run } = await boot(both());
    const r = await run('web_search', { query: 'all fail' });
    expect(r.success).toBe(false);
    expect(r.result).toMatch(/No search provider answered: searchA: HTTP 500.*searchB: HTTP 500/);
    expect(r.result).not.toContain(A_KEY);
    serper.mode = 'ok';
    const wrong = await boot({ searchAApiKey: 'wrong', searchABaseUrl: serper.base });
    const w = await wrong.run('web_search', { query: 'x' });
    expect(w.success).toBe(false);
    expect(w.result).toMatch(/searchA: HTTP 403: the API key was refused \(check searchAApiKey\)/);
  });

  it('caches an answer for the same query for a short while', async () => {
    const { run } = await boot(both());
    const first = await run('web_search', { query: 'cached' });
    const second = await run('web_search', { query: 'Cached ' });
    expect(second.result).toBe(first.result);
    expect(serper.calls).toHaveLength(1);
    const off = await boot({ ...both(), searchCacheSeconds: 0 });
    await off.run('web_search', { query: 'cached' });
    await off.run('web_search', { query: 'cached' });
    expect(serper.calls).toHaveLength(3);
  });

  it('without a key: a clear message naming the keys, and the skill is left out of the catalogue', async () => {
    const { kernel, run } = await boot({});
    const r = await run('web_search', { query: 'x' });
    expect(r.success).toBe(false);
    expect(r.result).toMatch(/searchAApiKey.*SEARCHA_API_KEY.*searchBApiKey.*SEARCHB_API_KEY/);
    // what ctx.skills.list() (the agent's catalogue, the gateway's skill list) keeps
    const listed = (k: typeof kernel) =>
      [...k.registry.skills.values()].filter((e) => k.registry.isAvailable(e)).map((e) => e.manifest.name);
    expect(listed(kernel)).not.toContain('web_search');
    expect(listed(kernel)).toContain('http_fetch');
    expect(kernel.registry.skills.has('web_search')).toBe(true);
    const withKey = await boot({ searchBApiKey: B_KEY, searchBBaseUrl: brave.base });
    expect(listed(withKey.kernel)).toContain('web_search');
  });
});

describe('canonicalUrl', () => {
  it('treats scheme, www, default port, fragment, tracking parameters, parameter order and trailing slash as the same page', () => {
    const c = canonicalUrl('https://www.Example.com:443/a/b/?utm_source=x&b=2&a=1#frag');
    expect(c).toBe(canonicalUrl('http://example.com/a/b?a=1&b=2'));
    expect(c).not.toBe(canonicalUrl('http://example.com/a/b?a=1&b=3'));
    expect(canonicalUrl('http://example.com:8080/')).toBe('example.com:8080');
  });
});
