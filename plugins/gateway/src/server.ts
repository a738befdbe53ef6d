/**
 * The gateway's HTTP server: fastify with the REST routes, API-key auth, CORS, the WebSocket (ws.ts) and
 * optional static files, all on one port.
 */
import { STATUS_CODES } from 'node:http';
import Ajv from 'ajv';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { browserUrl, environmentError, errorMessage, type GatewayCaller, type KernelInfoCapability } from '../../../sdk/index.js';
import { isLoopback as socketIsLoopback, loopbackOnly, type GatewayDeps } from './deps.js';
import { errorBody, errorHandler, notFound, schemaErrorFormatter, sendError, statusForCode } from './errors.js';
import { createExtensions, type Extensions } from './extensions.js';
import { requestGate } from './gate.js';
import { openApiDocument } from './openapi.js';
import { agentRoutes } from './rest/agent.js';
import { consoleRoutes } from './rest/console.js';
import { dataRoutes } from './rest/data.js';
import type { RouteDef, RouteEnv } from './rest/route.js';
import * as S from './rest/schemas.js';
import { settingsRoutes } from './rest/settings.js';
import { registerDashboardAssets, registerStatic, rootHandler } from './static.js';
import { registerWebSocket } from './ws.js';

export interface BuildOptions {
  /** Decides whether a request came over loopback (default: the socket's remote address). Tests inject it. */
  isLoopback?: (req: FastifyRequest) => boolean;
}

/** The address the gateway listens on, offered as capability `gateway:address`. */

/** Every built-in REST route (the OpenAPI route included), in registration order. */
export function restRoutes(env: RouteEnv, extensions?: Extensions): RouteDef[] {
  const routes = [...agentRoutes(env), ...settingsRoutes(env), ...dataRoutes(env), ...consoleRoutes(env)];
  // The document lists extension routes too; it is rebuilt when the set of extensions changes.
  let doc: { key: string; value: unknown } | undefined;
  routes.push({
    method: 'GET',
    url: '/api/openapi.json',
    summary: 'This OpenAPI 3.1 document',
    schema: { response: { 200: S.OpenApiDoc, ...S.errors(401) } },
    handler: () => {
      const key = extensions?.signature() ?? '';
      if (doc?.key !== key) {
        const ext: RouteDef[] = (extensions?.routes() ?? []).map((r) => ({ ...r, handler: () => undefined }));
        doc = { key, value: openApiDocument([...routes, ...ext], env.info.version, Boolean(env.settings.apiKey)) };
      }
      return doc.value;
    },
  });
  return routes;
}

/**
 * Request validators: the body is checked strictly (no type coercion, unknown fields refused where the schema
 * closes the object); query strings and path parameters are text, so they are coerced to the schema's types.
 */
function validators() {
  // The routes' schemas are the gateway's own (TypeBox, tested): not checked against the JSON Schema meta-schema,
  // whose compile would cost each instance some 20 ms at every start.
  const opts = { allErrors: false, strict: false, useDefaults: true, removeAdditional: false, validateSchema: false } as const;
  const body = new Ajv.default({ ...opts, coerceTypes: false });
  const text = new Ajv.default({ ...opts, coerceTypes: 'array' });
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) => (httpPart === 'body' ? body : text).compile(schema);
}

/**
 * Whether an agent runs is read from pid files on disk; GET /api/status is polled by dashboards, so the answer is
 * kept for half a second instead of costing file reads on every request.
 */
function cachedInfo(info: KernelInfoCapability): KernelInfoCapability {
  let at = -Infinity;
  let running = false;
  return Object.assign(Object.create(info) as KernelInfoCapability, info, {
    agentRunning: () => {
      const now = performance.now();
      if (now - at > 500) {
        running = info.agentRunning();
        at = now;
      }
      return running;
    },
  });
}

export async function buildServer(deps: GatewayDeps, opts: BuildOptions = {}): Promise<FastifyInstance> {
  const { settings, ctx } = deps;
  const app = Fastify({
    logger: false,
    bodyLimit: settings.bodyLimit,
    // Long headers or odd URLs are answered by Node (431/400) before fastify; the rest reaches the handlers below.
    return503OnClosing: true,
    forceCloseConnections: true,
    schemaErrorFormatter,
    // A URL that does not decode (bad %-escapes, overlong UTF-8 such as %c0%ae) is a 404 outside /api, as a
    // traversal attempt gets, and a 400 under /api.
    // Bytes that are not HTTP at all (or headers too large) never reach a route: answer in the same `{error, message}` form.
    clientErrorHandler: (err: NodeJS.ErrnoException, socket) => {
      if (!socket.writable) return socket.destroy();
      const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
      const body = JSON.stringify(errorBody(status, status === 431 ? 'Request headers too large.' : 'Malformed HTTP request.'));
      socket.end(
        `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    },
    frameworkErrors: (err, req, reply) => {
      const path = String(req.url ?? '').split('?')[0] ?? '';
      const api = path === '/api' || path.startsWith('/api/');
      if (err.code === 'FST_ERR_BAD_URL' && !api) return sendError(reply, 404, 'Not found.');
      return sendError(reply, 400, api ? `Malformed request URL: ${err.message}` : err.message);
    },
  });
  const env: RouteEnv = { ...deps, info: cachedInfo(deps.info), isLoopback: opts.isLoopback ?? socketIsLoopback };

  // JSON only: text/plain (fastify's other default parser) gets 415 like any other type.
  app.removeContentTypeParser('text/plain');
  app.setValidatorCompiler(validators());
  app.setErrorHandler(errorHandler(ctx.log, settings.bodyLimit));
  app.setNotFoundHandler(notFound);

  app.addHook(
    'onRequest',
    requestGate({
      corsOrigins: settings.corsOrigins,
      apiKey: settings.apiKey,
      host: settings.host,
      loopbackOnly: loopbackOnly(settings.host),
      warn: (m) => ctx.log.warn(m),
    }),
  );

  const builtin = new Set<string>();
  const extensions = createExtensions(ctx, builtin);
  const routes = restRoutes(env, extensions);
  for (const r of routes) builtin.add(`${r.method} ${r.url}`);
  for (const r of routes) {
    app.route({
      method: r.method,
      url: r.url,
      schema: { ...r.schema, response: r.schema.response },
      handler: r.handler,
    });
  }
  // Anything else under /api is another plugin's route (gateway:routes:<plugin>) or a JSON 404, even when the
  // static folder has an `api` folder.
  app.all('/api/*', extensionHandler(env, extensions));
  app.all('/api', notFound);
  // Protocol endpoints other plugins add (an OpenAI-compatible /v1, MCP's /mcp): the key applies as under /api.
  app.all('/v1/*', extensionHandler(env, extensions));
  app.all('/mcp', extensionHandler(env, extensions));
  app.all('/mcp/*', extensionHandler(env, extensions));

  // The dashboard plugin's page at / unless a static folder replaces it (looked up per request).
  const dashboard = () => {
    try {
      return ctx.use('dashboard');
    } catch {
      return undefined;
    }
  };
  try {
    await registerWebSocket(app, deps, { root: rootHandler(settings.staticDir, dashboard), extensions });
    if (!settings.staticDir) registerDashboardAssets(app, dashboard);
    await registerStatic(app, settings.staticDir);
  } catch (e) {
    // A failure past this point (a static folder that is not there) closes what the WebSocket part opened (the
    // event bus, its log listener, the relay's Redis connections) instead of leaving it for every retry.
    await app.close().catch(() => undefined);
    throw e;
  }
  return app;
}

function warnIfExposed(deps: GatewayDeps): void {
  const { host, apiKey } = deps.settings;
  if (apiKey || loopbackOnly(host)) return;
  const lines = [
    '**************************************************************************',
    `WARNING: the gateway listens on ${host} WITHOUT an API key.`,
    'Anyone who can reach this port controls the agent: they can queue tasks, run skills',
    '(including commands on this machine) and read its memory and configuration.',
    'Set gatewayApiKey (or start with `keel gateway -k <key>`), or bind to 127.0.0.1 (-h 127.0.0.1).',
    'Until then LOCKED settings and security settings refuse changes from other machines.',
    '**************************************************************************',
  ];
  for (const l of lines) deps.ctx.log.error(l);
}

export async function startServer(
  deps: GatewayDeps,
  opts: BuildOptions = {},
): Promise<{ close(): Promise<void>; health(): { ok: boolean; message?: string }; address: { host: string; port: number } }> {
  const { host, port } = deps.settings;
  const app = await buildServer(deps, opts);
  try {
    await app.listen({ host, port });
  } catch (e) {
    await app.close().catch(() => undefined);
    const code = (e as { code?: string }).code;
    if (code === 'EADDRINUSE') {
      throw environmentError(`Port ${port} is already in use on ${host}; choose another port with -p (keel gateway -p <port>).`);
    }
    if (code === 'EADDRNOTAVAIL' || code === 'EACCES' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
      throw environmentError(`Cannot listen on ${host}:${port} (${code}); choose another address with -h or port with -p.`);
    }
    throw e;
  }
  const bound = app.server.address();
  const address = { host, port: bound && typeof bound === 'object' ? bound.port : port };
  const shownHost = address.host.includes(':') ? `[${address.host}]` : address.host;
  const url = `http://${shownHost}:${address.port}`;
  deps.ctx.log.info(
    `Gateway listening on ${url}${!deps.settings.staticDir && hasDashboard(deps) ? `; dashboard: ${browserUrl(url)}` : ''}`,
  );
  warnIfExposed(deps);
  try {
    deps.ctx.provide('gateway:address', { ...address, url });
  } catch {
    // The manifest does not declare it (older manifest): the log line still tells the address.
  }
  let closed = false;
  return {
    address,
    async close() {
      if (closed) return;
      closed = true;
      await app.close();
    },
    health() {
      if (closed) return { ok: false, message: 'the gateway is stopped' };
      return app.server.listening ? { ok: true, message: `listening on ${url}` } : { ok: false, message: `not listening on ${url}` };
    },
  };
}

/** Who is calling: the operator when the key authenticated the request, or without a key over loopback. */
export function callerOf(env: Pick<RouteEnv, 'settings'>, loopback: boolean): GatewayCaller {
  return { operator: Boolean(env.settings.apiKey) || loopback, loopback, actor: { kind: 'operator', channel: 'gateway', loopback } };
}

/** Serves the routes of `gateway:routes:<plugin>` extensions (the request gate has already checked the key). */
function extensionHandler(env: RouteEnv, extensions: Extensions) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const path = String(req.url).split('?')[0] ?? '';
    const found = extensions.match(req.method, path);
    if (!found) return notFound(req, reply);
    if ('allowed' in found) {
      reply.header('allow', found.allowed.join(', '));
      return sendError(reply, 405, `${req.method} is not supported on ${path}; use ${found.allowed.join(' or ')}.`);
    }
    const { route, params } = found;
    const check = (schema: object | undefined, value: unknown, part: 'body' | 'text', where: string): string | undefined => {
      if (!schema) return undefined;
      const v = extensions.validator(schema, part);
      if (v(value)) return undefined;
      const e = v.errors?.[0];
      const missing = (e?.params as { missingProperty?: string } | undefined)?.missingProperty;
      const extra = (e?.params as { additionalProperty?: string } | undefined)?.additionalProperty;
      if (missing) return `${where} must have required property '${missing}'`;
      if (extra) return `${where}.${extra} is not allowed`;
      return `${where}${e?.instancePath ? e.instancePath.replace(/\//g, '.') : ''} ${e?.message ?? 'is invalid'}`;
    };
    const query = { ...(req.query as Record<string, unknown>) };
    // A stream route gets the body as parsed (MCP's transport reads it), a handler only what its schema declares.
    const body = route.schema.body ? (req.body ?? {}) : route.stream ? req.body : undefined;
    const problem =
      check(route.schema.params, params, 'text', 'params') ??
      check(route.schema.querystring, query, 'text', 'querystring') ??
      check(route.schema.body, body, 'body', 'body');
    if (problem) return sendError(reply, 400, `Invalid request: ${problem}.`);
    const abort = new AbortController();
    // The client went away: the response closed before it was finished. (The request's own 'close' fires as soon
    // as its body has been read, so it says nothing about the client.)
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) abort.abort();
    });
    const headers: Record<string, string | string[] | undefined> = { ...req.headers };
    delete headers['x-api-key'];
    if (typeof headers.authorization === 'string' && /^bearer\s/i.test(headers.authorization)) delete headers.authorization;
    const request = { params, query, body, caller: callerOf(env, env.isLoopback(req)), headers, signal: abort.signal };
    try {
      if (route.stream) {
        // The route writes its own answer: the gateway's headers (CORS) go on the raw response first.
        const res = reply.raw;
        for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) res.setHeader(name, value as string);
        reply.hijack();
        try {
          await route.stream({ ...request, raw: req.raw, res });
        } catch (e) {
          env.ctx.log.warn(`gateway: ${route.plugin} route ${route.method} ${route.url} failed: ${errorMessage(e)}`);
          if (!res.headersSent) {
            res.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
            res.end(
              JSON.stringify({ error: 'Internal Server Error', message: `The ${route.plugin} plugin failed to answer this request.` }),
            );
          } else res.end();
        }
        return reply;
      }
      const out = await route.handler!(request);
      reply.code(out.status ?? 200);
      return out.body;
    } catch (e) {
      const code = typeof (e as { code?: unknown })?.code === 'string' ? (e as { code: string }).code : undefined;
      const status = statusForCode(code);
      if (status) return sendError(reply, status, errorMessage(e));
      env.ctx.log.warn(`gateway: ${route.plugin} route ${route.method} ${route.url} failed: ${errorMessage(e)}`);
      return sendError(reply, 500, `The ${route.plugin} plugin failed to answer this request.`);
    }
  };
}

/** Whether the dashboard plugin serves `/` (it may be kept out by the plugin lists). */
function hasDashboard(deps: GatewayDeps): boolean {
  try {
    return deps.ctx.use('dashboard') !== undefined;
  } catch {
    return false;
  }
}
