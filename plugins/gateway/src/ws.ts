/**
 * The gateway WebSocket (SPEC "Gateway WebSocket", "Events"; protocol in docs/websocket.md).
 *
 * - Routes `GET /` and `GET /ws`: an upgrade gets the socket, plain HTTP goes to `opts.root` (the static index).
 * - Auth (`?apiKey=`) is checked by the server's onRequest hook before this file sees the request. Here the
 *   upgrade's `Origin` is checked against `gatewayCorsOrigins` unless that list is `["*"]` (403 before the
 *   upgrade). A request without `Origin` is a non-browser client and is allowed: Origin protects browsers
 *   from cross-site use of their ambient access, and any non-browser client can send whatever Origin it likes.
 * - On connect: `{type:'status', data:{running, model, memory}}`; then every bus event as
 *   `{type:'event', event, data}`; client messages `{action, data?, id?}` get
 *   `{type:'reply', action, id?, ok:true, result}` or `{type:'reply', action, id?, ok:false, error:{code, message, plugin?}}`
 *   (`plugin`: the id of the plugin whose error it was, when a skill failed).
 * - Limits: frames up to {@link WS_MAX_PAYLOAD} bytes (a larger frame closes the socket with 1009); a client
 *   whose unsent data passes {@link WS_MAX_BUFFERED} bytes is dropped with 1013 rather than buffered without end.
 */
import websocket from '@fastify/websocket';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Compile } from 'typebox/compile';
import type { WebSocket } from 'ws';
import {
  Type,
  type Actor,
  type GatewayCaller,
  type TSchema,
  errorCodeOf,
  errorMessage,
  errorPluginOf,
  pluginError,
} from '../../../sdk/index.js';
import type { GatewayDeps } from './deps.js';
import { isLoopback } from './deps.js';
import { createEventBus } from './events.js';
import { relaySettings, startRelay } from './relay.js';
import type { Extensions } from './extensions.js';
import { normOrigin } from './gate.js';
import { agentStatus } from './status.js';
import { createEventStream } from './stream.js';

/** The subprotocol a browser offers (with `keel-key.<base64url key>`) to authenticate without a key in the URL. */
export const WS_PROTOCOL = 'keel.v1';

/** Largest client frame (bytes). */
export const WS_MAX_PAYLOAD = 1_048_576;
/** Unsent bytes a client may lag behind before it is dropped (close 1013). */
export const WS_MAX_BUFFERED = 4 * 1_048_576;
/** Paths that accept the WebSocket upgrade. */
export const WS_PATHS = ['/', '/ws'] as const;

/** Error codes of WebSocket replies (kernel codes pass through as they are). */
export const WsErrorCodes = {
  BAD_JSON: 'KEEL_E_WS_BAD_JSON',
  BAD_MESSAGE: 'KEEL_E_WS_BAD_MESSAGE',
  BINARY: 'KEEL_E_WS_BINARY_FRAME',
  UNKNOWN_ACTION: 'KEEL_E_WS_UNKNOWN_ACTION',
  INVALID_DATA: 'KEEL_E_INVALID_INPUT',
  FORBIDDEN: 'KEEL_E_FORBIDDEN',
  INTERNAL: 'KEEL_E_INTERNAL',
} as const;

const Envelope = Type.Object({
  action: Type.String({ minLength: 1, maxLength: 64 }),
  data: Type.Optional(Type.Unknown()),
  id: Type.Optional(Type.Union([Type.String({ maxLength: 200 }), Type.Number()])),
});

const ActionSchemas = {
  pushTask: Type.Object({ task: Type.String({ minLength: 1 }), priority: Type.Optional(Type.Integer()) }, { additionalProperties: false }),
  executeSkill: Type.Object(
    { skill: Type.String({ minLength: 1 }), parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())) },
    { additionalProperties: false },
  ),
  getStatus: Type.Union([Type.Object({}), Type.Null()]),
  setConfig: Type.Object({ key: Type.String({ minLength: 1 }), value: Type.Unknown() }, { additionalProperties: false }),
} satisfies Record<string, TSchema>;

type ActionName = keyof typeof ActionSchemas;
const ACTIONS = Object.keys(ActionSchemas) as ActionName[];

interface Checker {
  Check(value: unknown): boolean;
  Errors(value: unknown): Array<{ instancePath: string; message: string; params?: Record<string, unknown> }>;
}
// Compiled once, at module load.
const checkEnvelope = Compile(Envelope) as unknown as Checker;
const checkers = Object.fromEntries(ACTIONS.map((a) => [a, Compile(ActionSchemas[a]) as unknown as Checker])) as Record<
  ActionName,
  Checker
>;

/** The first schema error as a sentence naming the field. */
function describeErrors(c: Checker, value: unknown, where: string): string {
  const e = c.Errors(value)[0];
  if (!e) return `${where} is invalid`;
  const missing = (e.params?.requiredProperties as string[] | undefined)?.[0];
  if (missing) return `${where}.${missing} is required`;
  const extra = (e.params?.additionalProperties as string[] | undefined)?.[0];
  if (extra) return `${where}.${extra} is not allowed`;
  const field = e.instancePath ? `${where}${e.instancePath.replace(/\//g, '.')}` : where;
  return `${field} ${e.message}`;
}

interface Client {
  socket: WebSocket;
  actor: Actor;
  loopback: boolean;
  caller: GatewayCaller;
}

/** `?since=<seq>` of the upgrade request, when it is a whole number. */
function sinceOf(req: FastifyRequest): number | undefined {
  const raw = (req.query as Record<string, unknown> | undefined)?.since;
  const v = Array.isArray(raw) ? raw[0] : raw;
  if (typeof v !== 'string' || !/^\d{1,16}$/.test(v)) return undefined;
  return Number(v);
}

/** Whether the upgrade's Origin is acceptable (see the file comment). */
export function originAllowed(origin: string | undefined, allowed: readonly string[]): boolean {
  if (allowed.includes('*')) return true;
  if (origin === undefined || origin === '') return true;
  const o = normOrigin(origin);
  return allowed.some((a) => normOrigin(a) === o);
}

export async function registerWebSocket(
  app: FastifyInstance,
  deps: GatewayDeps,
  opts: { root: (req: FastifyRequest, reply: FastifyReply) => unknown; extensions?: Extensions },
): Promise<void> {
  const clients = new Set<Client>();
  const bus = createEventBus(deps);
  const stream = createEventStream(bus);
  const log = deps.ctx.log;
  // A shared queue: the agent events of every process on it reach this gateway's clients (relay.ts).
  const shared = relaySettings(deps.ctx.config);
  const relay = shared
    ? await startRelay({ ...shared, bus, receive: true, log }).catch((e: unknown) => {
        log.warn(`gateway: live events of other processes are not shown: ${errorMessage(e)}`);
        return undefined;
      })
    : undefined;
  try {
    deps.ctx.provide('gateway:events', {
      emit(event, data) {
        (bus.emitForeign ?? bus.emit)(event, data);
        return stream.last();
      },
    });
  } catch {
    // Not declared by the manifest (an older manifest): extensions then cannot emit, the stream still works.
  }

  /** Sends one frame unless the client lags too far behind, in which case it is dropped. */
  const send = (c: Client, frame: string): void => {
    const s = c.socket;
    if (s.readyState !== s.OPEN) return;
    if (s.bufferedAmount > WS_MAX_BUFFERED) {
      drop(c);
      return;
    }
    s.send(frame);
  };
  const drop = (c: Client): void => {
    if (!clients.delete(c)) return;
    log.warn(`gateway: dropped a WebSocket client that fell ${c.socket.bufferedAmount} bytes behind (limit ${WS_MAX_BUFFERED}).`);
    try {
      c.socket.close(1013, 'too slow: the server dropped this client instead of buffering without end');
    } catch {
      /* already closing */
    }
    // A client too slow to read its data will not read the close frame either.
    setTimeout(() => c.socket.terminate(), 1000).unref();
  };

  const unsubscribe = stream.onFrame((f) => {
    for (const c of clients) send(c, f.text);
  });

  // Before @fastify/websocket's own preClose (hooks run in order): a going-away close code for every client.
  app.addHook('preClose', (done) => {
    unsubscribe();
    void relay?.stop();
    stream.dispose();
    bus.dispose();
    for (const c of clients) {
      try {
        c.socket.close(1001, 'gateway stopping');
      } catch {
        /* ignore */
      }
    }
    clients.clear();
    done();
  });

  const checkOrigin = async (req: FastifyRequest, reply: FastifyReply) => {
    if (!req.ws) return;
    const origin = req.headers.origin;
    if (!originAllowed(origin, deps.settings.corsOrigins)) {
      await reply.code(403).send({
        error: 'Forbidden',
        message: `Origin ${origin} is not allowed: it is not listed in gatewayCorsOrigins.`,
      });
    }
  };

  const wsHandler = (socket: WebSocket, req: FastifyRequest) => {
    const loopback = isLoopback(req);
    const actor: Actor = { kind: 'operator', channel: 'ws', loopback };
    const c: Client = { socket, loopback, actor, caller: { operator: Boolean(deps.settings.apiKey) || loopback, loopback, actor } };
    clients.add(c);
    socket.on('close', () => clients.delete(c));
    socket.on('error', () => clients.delete(c));
    // The status frame carries the current seq: a client that keeps it can resume from there after a drop.
    try {
      const s = agentStatus(deps);
      send(c, JSON.stringify({ type: 'status', seq: stream.last(), data: { running: s.running, model: s.model, memory: s.memory } }));
    } catch (e) {
      log.warn(`gateway: initial WebSocket status failed: ${errorMessage(e)}`);
    }
    const since = sinceOf(req);
    if (since !== undefined) {
      const missed = stream.replay(since);
      if (missed.kind === 'gap') send(c, missed.text);
      else for (const f of missed.frames) send(c, f.text);
    }
    socket.on('message', (raw, isBinary) => {
      void handle(c, raw, isBinary);
    });
  };

  // @fastify/websocket and its routes in a scope of their own: the plugin's per-request hooks (an onRequest and an
  // onResponse, which costs response listeners) then run for `/` and `/ws` only, not for every REST call. An
  // upgrade request to any other path is answered by that route and its socket closed by the gate (gate.ts).
  await app.register(async (scope) => {
    await scope.register(websocket, {
      options: {
        maxPayload: WS_MAX_PAYLOAD,
        // A browser that offered subprotocols fails the connection unless one is selected; the key protocol never is.
        handleProtocols: (protocols: Set<string>) => (protocols.has(WS_PROTOCOL) ? WS_PROTOCOL : false),
      },
    });
    for (const url of WS_PATHS) {
      scope.route({ method: 'GET', url, handler: opts.root, wsHandler, onRequest: checkOrigin });
    }
  });

  async function handle(c: Client, raw: unknown, isBinary: boolean): Promise<void> {
    let action: string | null = null;
    let id: string | number | undefined;
    try {
      if (isBinary) throw pluginError(WsErrorCodes.BINARY, 'Binary frames are not supported: send JSON text frames {action, data}.');
      const text = Buffer.isBuffer(raw)
        ? raw.toString('utf8')
        : Array.isArray(raw)
          ? Buffer.concat(raw as Buffer[]).toString('utf8')
          : Buffer.from(raw as ArrayBuffer).toString('utf8');
      let msg: unknown;
      try {
        msg = JSON.parse(text);
      } catch {
        throw pluginError(WsErrorCodes.BAD_JSON, 'The message is not valid JSON: send {"action": "...", "data": {...}}.');
      }
      if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) {
        throw pluginError(WsErrorCodes.BAD_MESSAGE, 'The message must be a JSON object {"action": "...", "data": {...}}.');
      }
      const m = msg as Record<string, unknown>;
      if (typeof m.action === 'string') action = m.action.slice(0, 64);
      if ((typeof m.id === 'string' && m.id.length <= 200) || (typeof m.id === 'number' && Number.isFinite(m.id))) id = m.id;
      if (!checkEnvelope.Check(m))
        throw pluginError(WsErrorCodes.BAD_MESSAGE, `Invalid message: ${describeErrors(checkEnvelope, m, 'message')}.`);
      if (!(ACTIONS as string[]).includes(m.action as string)) {
        const ext = opts.extensions?.wsAction(m.action as string);
        if (!ext) {
          const known = [...ACTIONS, ...(opts.extensions?.wsActionNames() ?? [])];
          throw pluginError(WsErrorCodes.UNKNOWN_ACTION, `Unknown action "${action}". Known actions: ${known.join(', ')}.`);
        }
        const v = opts.extensions!.validator(ext.schema, 'body');
        if (!v(m.data)) {
          const e = v.errors?.[0];
          const missing = (e?.params as { missingProperty?: string } | undefined)?.missingProperty;
          const where = missing
            ? `data.${missing} is required`
            : `data${e?.instancePath?.replace(/\//g, '.') ?? ''} ${e?.message ?? 'is invalid'}`;
          throw pluginError(WsErrorCodes.INVALID_DATA, `Invalid data for ${m.action}: ${where}.`);
        }
        const result = await ext.handler(m.data, c.caller);
        send(c, JSON.stringify({ type: 'reply', action: m.action, ...(id !== undefined ? { id } : {}), ok: true, result }));
        return;
      }
      const name = m.action as ActionName;
      const checker = checkers[name];
      const absentOk = name === 'getStatus' && m.data === undefined;
      if (!absentOk && !checker.Check(m.data))
        throw pluginError(WsErrorCodes.INVALID_DATA, `Invalid data for ${name}: ${describeErrors(checker, m.data, 'data')}.`);
      const result = await run(c, name, m.data);
      send(c, JSON.stringify({ type: 'reply', action: name, ...(id !== undefined ? { id } : {}), ok: true, result }));
    } catch (e) {
      const code = errorCodeOf(e) ?? WsErrorCodes.INTERNAL;
      const message = errorMessage(e);
      const plugin = errorPluginOf(e);
      if (code === WsErrorCodes.INTERNAL) log.warn(`gateway: WebSocket ${action ?? 'message'} failed: ${message}`);
      send(
        c,
        JSON.stringify({
          type: 'reply',
          action,
          ...(id !== undefined ? { id } : {}),
          ok: false,
          error: { code, message, ...(plugin ? { plugin } : {}) },
        }),
      );
    }
  }

  async function run(c: Client, name: ActionName, data: unknown): Promise<unknown> {
    switch (name) {
      case 'pushTask': {
        const d = data as { task: string; priority?: number };
        const a = await deps.ctx.queue.push({
          task: d.task,
          ...(d.priority !== undefined ? { priority: d.priority } : {}),
          source: 'ws',
          actor: c.actor,
        });
        return { taskId: a.id, priority: a.priority, status: a.status, message: `Task queued with priority ${a.priority}.` };
      }
      case 'executeSkill': {
        const d = data as { skill: string; parameters?: Record<string, unknown> };
        const r = await deps.ctx.skills.execute(d.skill, d.parameters ?? {}, c.actor);
        if (!r.success) throw pluginError(errorCodeOf(r) ?? 'KEEL_E_SKILL_FAILED', r.result, r.plugin ? { plugin: r.plugin } : {});
        return { success: true, result: r.result, executionTime: r.executionTime };
      }
      case 'getStatus':
        return agentStatus(deps);
      case 'setConfig': {
        const d = data as { key: string; value: unknown };
        const spec = deps.info.configKeys().find((k) => k.key === d.key);
        if (spec?.policy === 'LOCKED' && !deps.settings.apiKey && !c.loopback) {
          throw pluginError(
            WsErrorCodes.FORBIDDEN,
            `${d.key} is LOCKED: without gatewayApiKey, LOCKED keys can be changed only from the gateway's own machine (loopback). Set gatewayApiKey or change it with \`keel config set\`.`,
          );
        }
        const outcome = await deps.ctx.config.set(d.key, d.value, {
          kind: 'operator',
          actor: c.actor,
          reason: 'gateway WebSocket setConfig',
        });
        if (outcome.status === 'pending') return { status: 'pending', key: outcome.key, id: outcome.id, message: outcome.message };
        const value = deps.ctx.config.all({ masked: true })[d.key];
        return { status: 'applied', key: d.key, value, message: `${d.key} set.` };
      }
    }
  }
}
