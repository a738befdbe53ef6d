/**
 * Static files (a dashboard) from one folder at `/`, never outside it; `/api` always wins.
 */
import { errorsFor } from '../../../sdk/errors.js';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from './errors.js';
import type { DashboardCapability } from '../../../sdk/index.js';

const coded = errorsFor('gateway');

/**
 * True when a path tries to leave the folder or hide its meaning: `..` segments (plain or %-encoded, also
 * double-encoded), backslashes, encoded slashes, NUL.
 */
export function suspiciousPath(rawPath: string): boolean {
  let p = rawPath;
  for (let i = 0; i < 4; i++) {
    if (/%2f|%5c|%00/i.test(p)) return true;
    if (p.includes('\\') || p.includes('\0') || p.includes('//')) return true;
    if (p.split('/').some((seg) => seg === '..' || seg === '.')) return true;
    let next: string;
    try {
      next = decodeURIComponent(p);
    } catch {
      return true;
    }
    if (next === p) return false;
    p = next;
  }
  return true;
}

/** What the dashboard plugin offers as capability `dashboard` (built files and their content types). */
export type DashboardFiles = DashboardCapability;

/** The page's rules: its own scripts, styles and API only; no framing; no referrer. */
const PAGE_HEADERS: Record<string, string> = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
  vary: 'accept-encoding',
};

/** Sends one built dashboard file, the gzip copy when the browser accepts it. */
function sendDashboardFile(req: FastifyRequest, reply: FastifyReply, d: DashboardFiles, name: string): FastifyReply | undefined {
  const type = Object.hasOwn(d.files, name) ? d.files[name] : undefined;
  if (!type) return undefined;
  const gz = join(d.dir, `${name}.gz`);
  const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? '')) && existsSync(gz);
  reply.headers(PAGE_HEADERS).type(type);
  if (gzip) reply.header('content-encoding', 'gzip');
  return reply.send(readFileSync(gzip ? gz : join(d.dir, name)));
}

/**
 * Handler of `GET /` (plain HTTP): index.html of the static folder; without one, the dashboard plugin's page
 * (looked up per request: it may start after the gateway, and a pluginDenyList entry removes it); else a JSON 404.
 */
export function rootHandler(staticDir: string | undefined, dashboard: () => DashboardFiles | undefined = () => undefined) {
  const index = staticDir ? join(resolve(staticDir), 'index.html') : undefined;
  return (req: FastifyRequest, reply: FastifyReply) => {
    if (index && existsSync(index)) return reply.sendFile('index.html');
    const d = staticDir ? undefined : dashboard();
    if (d) {
      const sent = sendDashboardFile(req, reply, d, 'index.html');
      if (sent) return sent;
    }
    return sendError(
      reply,
      404,
      staticDir
        ? `No index.html in ${staticDir}.`
        : 'No static folder is configured (keel gateway -s <dir>) and the dashboard plugin is not running. The API is under /api; see /api/openapi.json.',
    );
  };
}

/** `GET /assets/:file`: the dashboard's built files (only when no static folder replaces the dashboard). */
export function registerDashboardAssets(app: FastifyInstance, dashboard: () => DashboardFiles | undefined): void {
  app.get('/assets/:file', (req, reply) => {
    const d = dashboard();
    const { file } = req.params as { file: string };
    if (d && sendDashboardFile(req, reply, d, file)) return reply;
    return sendError(reply, 404, 'Not found.');
  });
}

/** Registers the static folder (when set). Call after the /api routes so they keep precedence. */
export async function registerStatic(app: FastifyInstance, staticDir: string | undefined): Promise<void> {
  // Traversal attempts outside /api are refused by the request gate (gate.ts) before any route.
  if (!staticDir) {
    // reply.sendFile must exist for the root handler even without a folder.
    return;
  }
  const root = resolve(staticDir);
  if (!existsSync(root) || !statSync(root).isDirectory())
    throw coded('KEEL_E_NOT_CONFIGURED', `The static folder ${root} does not exist or is not a folder.`);
  await app.register(fastifyStatic, {
    root,
    prefix: '/',
    index: false,
    dotfiles: 'ignore',
    wildcard: true,
    allowedPath: (pathName) => !suspiciousPath(pathName),
  });
}
