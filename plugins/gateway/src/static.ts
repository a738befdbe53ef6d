/**
 * Static files (a dashboard) from one folder at `/`, never outside it; `/api` always wins.
 */
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from './errors.js';

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

/** Handler of `GET /` (plain HTTP): index.html of the static folder, or a JSON 404 pointing at the API. */
export function rootHandler(staticDir: string | undefined) {
  const index = staticDir ? join(resolve(staticDir), 'index.html') : undefined;
  return (_req: FastifyRequest, reply: FastifyReply) => {
    if (index && existsSync(index)) return reply.sendFile('index.html');
    return sendError(reply, 404, staticDir ? `No index.html in ${staticDir}.` : 'No static folder is configured (keel gateway -s <dir>). The API is under /api; see /api/openapi.json.');
  };
}

/** Registers the static folder (when set). Call after the /api routes so they keep precedence. */
export async function registerStatic(app: FastifyInstance, staticDir: string | undefined): Promise<void> {
  // Traversal attempts outside /api are refused by the request gate (gate.ts) before any route.
  if (!staticDir) {
    // reply.sendFile must exist for the root handler even without a folder.
    return;
  }
  const root = resolve(staticDir);
  if (!existsSync(root) || !statSync(root).isDirectory()) throw new Error(`The static folder ${root} does not exist or is not a folder.`);
  await app.register(fastifyStatic, {
    root,
    prefix: '/',
    index: false,
    dotfiles: 'ignore',
    wildcard: true,
    allowedPath: (pathName) => !suspiciousPath(pathName),
  });
}
