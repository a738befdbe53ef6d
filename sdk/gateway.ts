/**
 * Extending the gateway from another plugin (docs/api.md "Extending the gateway"): a plugin provides
 * `gateway:routes:<its id>` with REST routes under `/api` and WebSocket actions; the gateway looks extensions up
 * when a request arrives (so start order does not matter) and lists their routes in `/api/openapi.json`. The
 * gateway, while it serves, provides `gateway:events` to put events on its WebSocket stream (with `seq`, resumable).
 * Authentication (the gateway key) and CORS apply to extension routes exactly as to the built-in ones.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TSchema } from 'typebox';
import type { Actor } from './types.js';

/**
 * Who sent a request to the gateway. `operator` is true when the request is authenticated by the gateway key, or
 * the gateway has no key and the request came over loopback; the actor is then `{kind: 'operator'}`.
 * @example if (!req.operator) return { status: 403, body: { error: 'Forbidden', message: 'operator only' } };
 */
export interface GatewayCaller {
  operator: boolean;
  loopback: boolean;
  actor: Actor;
}

/**
 * A REST route an extension adds. `url` starts with `/api/`, or `/v1/` (protocol endpoints such as an
 * OpenAI-compatible API), or is `/mcp` or under `/mcp/`; `:name` segments are path parameters. Every one of them
 * needs the gateway key (`X-Api-Key`, or `Authorization: Bearer <key>` as protocol clients send it). Bodies and
 * query strings are validated against the schemas (400 with the first error otherwise).
 *
 * A route gives `handler` (its answer is a status and a JSON body) or `stream` (it writes its own answer on the raw
 * Node response: server-sent events, MCP's streamable HTTP). A `stream` route gets the parsed JSON body and the
 * gateway's CORS headers already set on `res`.
 * @example
 * const route: GatewayRoute = { method: 'POST', url: '/api/echo', summary: 'Echo', schema: { body: Type.Object({ text: Type.String() }),
 *   response: { 200: Type.Object({ text: Type.String() }) } }, handler: ({ body }) => ({ body }) };
 */
export interface GatewayRoute {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  summary: string;
  description?: string;
  schema: { params?: TSchema; querystring?: TSchema; body?: TSchema; response: Record<number, TSchema> };
  handler?(req: GatewayRequest): { status?: number; body: unknown } | Promise<{ status?: number; body: unknown }>;
  stream?(req: GatewayRequest & { raw: IncomingMessage; res: ServerResponse }): Promise<void>;
}

/** What a route's handler gets: path parameters, the query string, the parsed body, who is calling, the headers. */
export interface GatewayRequest {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  caller: GatewayCaller;
  /** The request's headers, lower-case names (the gateway key is removed). */
  headers: Record<string, string | string[] | undefined>;
  /** Aborted when the client goes away (a long answer should stop). */
  signal: AbortSignal;
}

/**
 * A WebSocket action an extension adds: a client message `{action: name, data, id?}` is checked against `schema`
 * and answered with `{type: 'reply', action, id?, ok: true, result}` (or `ok: false` with the thrown error).
 * @example const chat: GatewayWsAction = { schema: Type.Object({ text: Type.String() }), handler: (data, caller) => ({ ok: true }) };
 */
export interface GatewayWsAction {
  schema: TSchema;
  description?: string;
  handler(data: unknown, caller: GatewayCaller): unknown | Promise<unknown>;
}

/**
 * Capability `gateway:routes:<plugin id>`, provided by an extension.
 * @example ctx.provide('gateway:routes:echo', { routes: [route], wsActions: { echo: action } });
 */
export interface GatewayRoutesCapability {
  routes?: GatewayRoute[];
  wsActions?: Record<string, GatewayWsAction>;
}

/**
 * Capability `gateway:events`, provided by the gateway while it serves: puts an event on the WebSocket stream.
 * Returns the event's `seq`. Texts should be short; secrets never go in.
 * @example ctx.use('gateway:events')?.emit('chat.reply', { conversationId: 'c1', text: 'hi' });
 */
export interface GatewayEventsCapability {
  emit(event: string, data: Record<string, unknown>): number;
}

/**
 * Capability `dashboard`: the dashboard plugin's built files (a folder) and each file's content type; the gateway
 * serves them at `/` unless a static folder is configured.
 * @example const d = ctx.use('dashboard'); if (d) serve(join(d.dir, 'index.html'), d.files['index.html']);
 */
export interface DashboardCapability {
  dir: string;
  files: Record<string, string>;
}

/**
 * The address to open in a browser for a gateway that listens on `url` (`http://host:port`): `localhost` for a
 * wildcard or loopback bind (0.0.0.0 is not an address to open), the host itself otherwise.
 * @example browserUrl('http://0.0.0.0:3100') // 'http://localhost:3100/'
 */
export function browserUrl(url: string): string {
  const m = /^http:\/\/(\[[^\]]+\]|[^:/]+):(\d+)/.exec(url);
  if (!m) return url;
  const host = ['0.0.0.0', '[::]', '127.0.0.1', '[::1]', 'localhost'].includes(m[1]!) ? 'localhost' : m[1]!;
  return `http://${host}:${m[2]}/`;
}

/**
 * Whether the gateway serves in this process (`gatewayAutoStart`): a plugin whose answers travel on the gateway's
 * connections (the gateway chat, the OpenAI-compatible endpoint) stays off without it, instead of accepting work it
 * could never answer.
 * @example if (!gatewayServesHere(ctx)) return {};
 */
export function gatewayServesHere(ctx: { config: { get<T = unknown>(key: string): T } }): boolean {
  try {
    return ctx.config.get<boolean>('gatewayAutoStart') === true;
  } catch {
    return false;
  }
}
