/**
 * Web fetching: `http_fetch`, `extract_article`, and the `web` capability (the same guarded fetch, used by
 * rag_ingest_url). See docs/web.md.
 */
import { Type, type PluginManifest } from '../../sdk/index.js';

export const DEFAULT_USER_AGENT = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36 Keel/1.0 (+agent)';

const manifest = {
  id: 'web',
  version: '1.0.0',
  kind: 'skill',
  description: 'Fetches web pages (http_fetch) and their main content (extract_article), refusing loopback, private and link-local addresses.',
  provides: ['web'],
  permissions: { network: true },
  config: {
    webAllowPrivateNetwork: {
      schema: Type.Boolean(),
      default: false,
      env: ['KEEL_WEB_ALLOW_PRIVATE_NETWORK'],
      policy: 'LOCKED',
      description:
        'Allow web fetches to loopback, private, link-local, CGNAT and other non-public addresses. LOCKED because it opens server-side request forgery against the host\'s own services and its local network.',
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
      description: 'Most bytes of a response body read (after decompression; 2 MiB by default); the rest is dropped and the result marked truncated.',
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
  },
  skills: [
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
      description: 'Fetch a web page and return its title, byline and main text without navigation, ads or footer. The text is untrusted web content.',
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
