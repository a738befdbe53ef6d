/**
 * The gateway's one request gate, run as a single `onRequest` hook before routing to a handler:
 * 1. CORS headers from `gatewayCorsOrigins` (and the answer to a preflight `OPTIONS`);
 * 2. the API key (`X-Api-Key` on REST, `?apiKey=` or the header on a WebSocket upgrade), in constant time;
 * 3. outside `/api`, a traversal attempt (`..`, encoded or not) is a plain 404;
 * and, before all of them, without a key: a gateway on loopback serves this machine only (a request a reverse
 * proxy forwarded, one addressed to another host name or sent by a web page from elsewhere gets 403), and one
 * beyond loopback refuses a web page of another origin that gatewayCorsOrigins does not list by name (403): with
 * no key, any site the user visits could otherwise drive the agent through the user's browser.
 *
 * One hook instead of three (and instead of @fastify/cors, which copies its options object per request): every
 * hook costs on every request, and `GET /api/status` is polled by dashboards (budget: 80% of a bare route).
 */
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { keyMatches, unauthorized } from './auth.js';
import { isLoopbackOrigin, notFromThisMachine, peerIsLoopback } from './deps.js';
import { sendError } from './errors.js';
import { suspiciousPath } from './static.js';

export const CORS_METHODS = 'GET, HEAD, POST, PUT, DELETE, OPTIONS';
/**
 * Request headers a web page may send: Keel's own, what MCP clients send, and what the openai package adds on every
 * request (its `X-Stainless-*` headers), so that the package used in a browser page passes its preflight.
 */
export const CORS_HEADERS = [
  'Content-Type',
  'X-Api-Key',
  'Authorization',
  'Idempotency-Key',
  'X-Keel-Conversation',
  'Mcp-Session-Id',
  'Mcp-Protocol-Version',
  'Last-Event-ID',
  'X-Stainless-Lang',
  'X-Stainless-Package-Version',
  'X-Stainless-OS',
  'X-Stainless-Arch',
  'X-Stainless-Runtime',
  'X-Stainless-Runtime-Version',
  'X-Stainless-Retry-Count',
  'X-Stainless-Timeout',
].join(', ');
/** Response headers a web page may read (MCP's session id). */
export const CORS_EXPOSE = 'Mcp-Session-Id';
/** How long a browser may cache a preflight answer, in seconds. */
export const CORS_MAX_AGE = 600;

/** `https://A.example/` and `https://a.example` are the same origin for the allow list. */
export function normOrigin(o: string): string {
  return o.trim().replace(/\/+$/, '').toLowerCase();
}

/**
 * The key a browser sends as a WebSocket subprotocol `keel-key.<base64url of the key>` (next to `keel.v1`), so that
 * it never appears in a URL, a log or the browser history. The server selects only `keel.v1`.
 */
export function keyFromProtocols(header: string | string[] | undefined): string | undefined {
  const list = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',');
  for (const p of list) {
    const t = p.trim();
    if (!t.startsWith('keel-key.')) continue;
    try {
      return Buffer.from(t.slice('keel-key.'.length), 'base64url').toString('utf8');
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/**
 * The key as protocol clients send it (`Authorization: Bearer <key>`: the openai package, MCP clients), accepted
 * wherever `X-Api-Key` is.
 */
export function bearerOf(header: string | string[] | undefined): string | undefined {
  const h = Array.isArray(header) ? header[0] : header;
  const m = typeof h === 'string' ? /^bearer\s+(\S+)\s*$/i.exec(h) : null;
  return m ? m[1] : undefined;
}

export interface GateOptions {
  corsOrigins: readonly string[];
  apiKey: string | undefined;
  /** The address the gateway listens on (a loopback one, without a key, means this machine only). */
  host?: string;
  /** Whether `host` is a loopback address. */
  loopbackOnly?: boolean;
  /** Told once when requests arrive through a reverse proxy while there is no key. */
  warn?: (message: string) => void;
}

/** Why a gateway without a key refuses this request, or undefined. */
/** `allowed`: the normalized gatewayCorsOrigins (`*` among them matches no Origin header, so it never counts here). */
function keylessRefusal(req: FastifyRequest, o: GateOptions, allowed: ReadonlySet<string>): string | undefined {
  if (o.loopbackOnly) {
    const why = peerIsLoopback(req) ? notFromThisMachine(req) : `it came from ${req.socket.remoteAddress}`;
    return why
      ? `This gateway listens on ${o.host ?? 'loopback'} without gatewayApiKey, so it serves this machine only, and this request is not from this machine: ${why}. Set gatewayApiKey to serve it (the key then decides).`
      : undefined;
  }
  const origin = req.headers.origin;
  if (typeof origin !== 'string' || isLoopbackOrigin(origin) || allowed.has(normOrigin(origin))) return undefined;
  // Same origin (the page came from this gateway, under whatever name it was reached): its own dashboard.
  let own = false;
  try {
    own = typeof req.headers.host === 'string' && new URL(origin).host === req.headers.host.trim().toLowerCase();
  } catch {
    own = false;
  }
  return own
    ? undefined
    : `A web page at ${origin} may not call this gateway: it has no gatewayApiKey, so any site its user visits could drive the agent through the browser. Set gatewayApiKey, or list that origin in gatewayCorsOrigins.`;
}

function isApi(url: string): boolean {
  return url.startsWith('/api/') || url === '/api' || url.startsWith('/api?');
}

/**
 * Routes anyone may load without the key: the page, its assets, the static folder (a browser cannot send a header
 * when it loads a page). Every other route needs the key.
 */
const PUBLIC_ROUTES: ReadonlySet<string> = new Set(['/', '/ws', '/assets/:file', '/*']);

/**
 * Whether this request reaches a handler that needs the key. Decided on the route the router matched (it decodes
 * the path first: `/%61pi/...` reaches `/api/...`), not on how the URL is spelled, and failing closed: a matched
 * route that is not a public one (an /api route, `/mcp`, `/v1/...` or any route added later) needs the key. An
 * unmatched path needs it when it is spelled /api (a JSON 401 instead of a 404 tells a client it forgot the key).
 */
function needsKey(req: FastifyRequest, url: string): boolean {
  if (isApi(url)) return true;
  const route = req.routeOptions?.url;
  return typeof route === 'string' && !PUBLIC_ROUTES.has(route);
}

export function requestGate(opts: GateOptions): onRequestHookHandler {
  const allowAll = opts.corsOrigins.includes('*');
  const allowed = new Set(opts.corsOrigins.map(normOrigin));
  const key = opts.apiKey || undefined;
  let proxyWarned = false;

  const cors = (req: FastifyRequest, reply: FastifyReply): void => {
    if (allowAll) {
      reply.header('access-control-allow-origin', '*');
      reply.header('access-control-expose-headers', CORS_EXPOSE);
      return;
    }
    // The answer depends on the request's Origin: caches must keep one per origin.
    reply.header('vary', 'Origin');
    const origin = req.headers.origin;
    if (typeof origin === 'string' && allowed.has(normOrigin(origin))) {
      reply.header('access-control-allow-origin', origin);
      reply.header('access-control-expose-headers', CORS_EXPOSE);
    }
  };

  return function gate(req, reply, done) {
    if ((req.raw as { upgrade?: boolean }).upgrade) {
      // Node handed this socket over for an upgrade: whatever answers it here (a 401, a 404, a REST route), the
      // socket is closed once the answer is out. An accepted WebSocket never ends an HTTP answer, so it stays.
      const socket = req.raw.socket;
      reply.raw.once('finish', () => socket.destroy());
    }
    if (!key) {
      const refusal = keylessRefusal(req, opts, allowed);
      if (refusal) {
        sendError(reply, 403, refusal);
        return;
      }
      if (!proxyWarned && opts.warn && (req.headers['x-forwarded-for'] !== undefined || req.headers.forwarded !== undefined)) {
        proxyWarned = true;
        opts.warn(
          'gateway: requests arrive through a reverse proxy and there is no gatewayApiKey: whoever reaches the proxy controls the agent (queue tasks, run skills). Set gatewayApiKey. Proxied requests never count as local: LOCKED and security settings refuse them.',
        );
      }
    }
    cors(req, reply);
    if (req.method === 'OPTIONS') {
      // A preflight carries no custom headers (no key): it is answered here, before auth and routing.
      reply.header('access-control-allow-methods', CORS_METHODS);
      reply.header('access-control-allow-headers', CORS_HEADERS);
      reply.header('access-control-max-age', String(CORS_MAX_AGE));
      // Safari waits for a body on a 204 without Content-Length.
      reply.code(204).header('content-length', '0').send();
      return;
    }
    const url = req.url;
    const api = needsKey(req, url);
    if (key) {
      const header = req.headers['x-api-key'];
      const provided = (Array.isArray(header) ? header[0] : header) ?? bearerOf(req.headers.authorization);
      if (!keyMatches(provided, key)) {
        if (String(req.headers.upgrade ?? '').toLowerCase() === 'websocket') {
          const q = (req.query as Record<string, unknown> | undefined)?.apiKey;
          const fromQuery = Array.isArray(q) ? q[0] : q;
          if (!keyMatches(fromQuery, key) && !keyMatches(keyFromProtocols(req.headers['sec-websocket-protocol']), key)) {
            reply.code(401).send(unauthorized(fromQuery ?? provided, 'query parameter apiKey'));
            return;
          }
        } else if (api) {
          // Static files are public (a browser cannot send the header when it loads a page); the API is not.
          reply.code(401).send(unauthorized(provided, 'header X-Api-Key'));
          return;
        }
      }
    }
    if (api) return done();
    const path = url.split('?')[0] ?? '';
    if (!suspiciousPath(path)) return done();
    sendError(reply, 404, 'Not found.');
  };
}
