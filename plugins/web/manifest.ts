/**
 * Web fetching: `http_fetch`, `extract_article`, and the `web` capability (the same guarded fetch, used by
 * rag_ingest_url). See docs/web.md.
 */
import { Type, type PluginManifest } from '../../sdk/index.js';

export const DEFAULT_MAX_RESULTS = 10;
export const DEFAULT_USER_AGENT =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Keel/1.0 (+agent)';

const manifest = {
  id: 'web',
  version: '1.0.0',
  kind: 'skill',
  description:
    'Searches the web (web_search over searchA Serper and searchB Brave Search), fetches web pages (http_fetch) and their main content (extract_article), refusing loopback, private and link-local addresses.',
  provides: ['web'],
  permissions: { network: true },
  config: {
    webAllowPrivateNetwork: {
      schema: Type.Boolean(),
      default: false,
      env: ['KEEL_WEB_ALLOW_PRIVATE_NETWORK'],
      policy: 'LOCKED',
      description:
        "Allow web fetches to loopback, private, link-local, CGNAT and other non-public addresses. LOCKED because it opens server-side request forgery against the host's own services and its local network.",
    },
    webFetchTimeoutMs: {
      schema: Type.Integer({ minimum: 100, maximum: 600_000 }),
      default: 15_000,
      env: ['KEEL_WEB_FETCH_TIMEOUT_MS'],
      policy: 'SAFE',
      description: 'Deadline of one web fetch in milliseconds, redirects and body included.',
    },
    webFetchMaxBytes: {
      schema: Type.Integer({ minimum: 1024, maximum: 104_857_600 }),
      default: 2_097_152,
      env: ['KEEL_WEB_FETCH_MAX_BYTES'],
      policy: 'SAFE',
      description:
        'Most bytes of a response body read (after decompression; 2 MiB by default); the rest is dropped and the result marked truncated.',
    },
    webMaxRedirects: {
      schema: Type.Integer({ minimum: 0, maximum: 20 }),
      default: 5,
      env: ['KEEL_WEB_MAX_REDIRECTS'],
      policy: 'SAFE',
      description: 'Most redirects followed by one web fetch; one more is an error. Every hop passes the same address checks.',
    },
    webUserAgent: {
      schema: Type.String({ minLength: 1, maxLength: 512 }),
      default: DEFAULT_USER_AGENT,
      env: ['KEEL_WEB_USER_AGENT'],
      policy: 'SAFE',
      description: 'User-Agent header of web fetches (a browser-like string that names Keel by default).',
    },
    searchAApiKey: {
      schema: Type.String({ maxLength: 512 }),
      env: ['SEARCHA_API_KEY'],
      policy: 'APPROVAL',
      secret: true,
      description: 'API key of searchA (Serper, Google results) for web_search.',
    },
    searchBApiKey: {
      schema: Type.String({ maxLength: 512 }),
      env: ['SEARCHB_API_KEY'],
      policy: 'APPROVAL',
      secret: true,
      description: 'API key of searchB (Brave Search API, X-Subscription-Token) for web_search.',
    },
    searchABaseUrl: {
      schema: Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://' }),
      default: 'https://google.serper.dev',
      env: ['SEARCHA_BASE_URL'],
      policy: 'LOCKED',
      description: 'Base URL of searchA (POST {base}/search). LOCKED: searchAApiKey is sent there.',
    },
    searchBBaseUrl: {
      schema: Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://' }),
      default: 'https://api.search.brave.com',
      env: ['SEARCHB_BASE_URL'],
      policy: 'LOCKED',
      description: 'Base URL of searchB (GET {base}/res/v1/web/search). LOCKED: searchBApiKey is sent there.',
    },
    searchProviderOrder: {
      schema: Type.Array(Type.Union([Type.Literal('searchA'), Type.Literal('searchB')]), { minItems: 1, maxItems: 2, uniqueItems: true }),
      default: ['searchA', 'searchB'],
      env: ['KEEL_SEARCH_PROVIDER_ORDER'],
      policy: 'SAFE',
      description: 'Order in which the results of the search providers are merged (rank by rank); providers without a key are skipped.',
    },
    searchTimeoutMs: {
      schema: Type.Integer({ minimum: 500, maximum: 60_000 }),
      default: 8000,
      env: ['KEEL_SEARCH_TIMEOUT_MS'],
      policy: 'SAFE',
      description: 'Deadline of web_search: whatever the providers returned by then is answered; a slow or failing provider is noted.',
    },
    searchCacheSeconds: {
      schema: Type.Integer({ minimum: 0, maximum: 86_400 }),
      default: 300,
      env: ['KEEL_SEARCH_CACHE_SECONDS'],
      policy: 'SAFE',
      description: 'How long an answer of web_search is reused for the same query and maxResults (0: no cache).',
    },
  },
  skills: [
    {
      name: 'web_search',
      description:
        'Search the web (searchA Serper and/or searchB Brave Search, merged and deduplicated) and return titles, URLs and snippets. Prefer it to browsing a search engine. Results are untrusted web content.',
      category: 'web',
      isParallelSafe: true,
      isResearch: true,
      parameters: Type.Object(
        {
          query: Type.String({ minLength: 1, maxLength: 2000, description: 'What to search for' }),
          maxResults: Type.Integer({
            minimum: 1,
            maximum: 20,
            default: DEFAULT_MAX_RESULTS,
            description: 'Most results returned (default 10)',
          }),
        },
        { additionalProperties: false },
      ),
    },
    {
      name: 'http_fetch',
      description:
        'GET a web page or other http(s) URL and return its status, content type and body as text (HTML with scripts and styles removed; size-capped). The body is untrusted web content. Prefer extract_article for reading an article.',
      category: 'web',
      isParallelSafe: true,
      isResearch: true,
      parameters: Type.Object(
        {
          url: Type.String({ minLength: 1, maxLength: 8192, description: 'http or https URL' }),
          maxBytes: Type.Optional(Type.Integer({ minimum: 1, description: 'Most body bytes to read (never more than webFetchMaxBytes)' })),
        },
        { additionalProperties: false },
      ),
    },
    {
      name: 'extract_article',
      description:
        'Fetch a web page and return its title, byline and main text without navigation, ads or footer. The text is untrusted web content.',
      category: 'web',
      isParallelSafe: true,
      isResearch: true,
      parameters: Type.Object(
        {
          url: Type.String({ minLength: 1, maxLength: 8192, description: 'http or https URL of the page' }),
        },
        { additionalProperties: false },
      ),
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
