/**
 * OpenAI-compatible endpoint plugin: a channel (`channel:openai-api`) whose inbound messages are chat completion
 * requests on the gateway (`POST /v1/chat/completions`), pushed through the SDK's `receive` like every chat message
 * (actor, admin, `messageIn` taps, session, dedupe), carried out by the agent with its skills and memory, and
 * answered on the same HTTP request: the agent's reply (through `reply`, after the `messageOut` taps), its
 * reasoning while it works (the `thinking` hook), the tokens its model calls used (the `modelCall` hook).
 * See docs/openai.md.
 */
import { errorsFor } from '../../sdk/errors.js';
import { randomUUID } from 'node:crypto';
import {
  definePlugin,
  errorMessage,
  outgoing,
  receive,
  Type,
  type Action,
  type ChannelCapability,
  type GatewayRequest,
  type GatewayRoutesCapability,
  type OutboundMessage,
  type PluginContext,
  gatewayServesHere,
} from '../../sdk/index.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import manifest from './manifest.js';
import { MODEL, parseRequest, RequestError } from './src/request.js';
import { chunk, completion, errorBody, modelObject, sendJson, sse, type Usage } from './src/wire.js';

const coded = errorsFor('openai-api');

const CHANNEL = 'openai-api';
/** Idempotency keys remembered (bounded), so a client's retry waits for the same action instead of running it again. */
const REMEMBERED = 10_000;
/** The longest thought a streamed answer carries as `reasoning_content`. */
const THOUGHT_CAP = 500;
/** A comment line this often keeps proxies and clients from closing a long silent stream. */
const KEEPALIVE_MS = 15_000;
/** How often a waiting request looks at its action in the queue (for an agent in another process). */
const POLL_MS = 1000;
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,200}$/;
const CONVERSATION = /^[A-Za-z0-9_.:-]{1,64}$/;

type RunEvent = { type: 'thinking'; text: string } | { type: 'done' };

/** What is known of one request's action while the agent works on it. */
interface Run {
  replies: string[];
  usage: { input: number; output: number };
  listeners: Set<(e: RunEvent) => void>;
  outcome?: { ok: true; text: string } | { ok: false; status: number; message: string; code: string };
}

function textOf(m: string | OutboundMessage): string {
  if (typeof m === 'string') return m;
  const files = (m.files ?? []).map((f) => `[file: ${f.path.split('/').pop() ?? f.path}${f.caption ? ` (${f.caption})` : ''}]`);
  return [m.text ?? '', ...files].filter(Boolean).join('\n');
}

function firstLine(s: unknown): string {
  return String(s ?? 'unknown error')
    .split('\n')[0]!
    .slice(0, 300);
}

function header(req: GatewayRequest, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' ? v : Array.isArray(v) ? v[0] : undefined;
}

export default definePlugin({
  manifest,
  setup(ctx) {
    // The answer travels on the HTTP request the gateway of this process holds: without a gateway serving here
    // the channel would accept work it can never answer, so it stays off (as the gateway chat does).
    if (!gatewayServesHere(ctx)) return {};
    const started = Math.floor(Date.now() / 1000);
    const runs = new Map<string, Run>();
    const byKey = new Map<string, string>();
    const rememberKey = (key: string, actionId: string) => {
      byKey.set(key, actionId);
      if (byKey.size > REMEMBERED) byKey.delete(byKey.keys().next().value!);
    };
    const ours = (actionId: string | undefined): boolean => !!actionId && ctx.queue.get(actionId)?.source === CHANNEL;
    const runOf = (actionId: string): Run => {
      let r = runs.get(actionId);
      if (!r) {
        r = { replies: [], usage: { input: 0, output: 0 }, listeners: new Set() };
        runs.set(actionId, r);
      }
      return r;
    };
    const fire = (r: Run, e: RunEvent) => {
      for (const l of r.listeners) l(e);
    };
    const finish = (actionId: string, outcome: NonNullable<Run['outcome']>) => {
      const r = runOf(actionId);
      if (r.outcome) return;
      r.outcome = outcome;
      fire(r, { type: 'done' });
      // Nobody waits (the client left): nothing to keep.
      if (r.listeners.size === 0) runs.delete(actionId);
    };

    const channel: ChannelCapability = {
      name: CHANNEL,
      status: () => {
        const up = ctx.use('gateway:address') !== undefined;
        return {
          enabled: true,
          connected: up,
          state: up ? 'connected' : 'stopped',
          ...(up ? {} : { lastError: 'the gateway is not serving in this process' }),
        };
      },
      // There is no chat to send to out of turn: an OpenAI client only hears the answer to its own request.
      send: async () => {
        throw coded(
          'KEEL_E_CHANNEL_SEND_FAILED',
          'openai-api answers only the request an action came from; it cannot send to a chat on its own.',
        );
      },
      async reply(action, message) {
        const m = await outgoing(ctx, CHANNEL, String(action.metadata.replyTo?.chatId ?? ''), message);
        const text = textOf(m);
        if (text) runOf(action.id).replies.push(text);
        const messageId = `oa_${randomUUID()}`;
        return { messageId, messageIds: [messageId] };
      },
    };
    ctx.provide(`channel:${CHANNEL}`, channel);

    ctx.hooks.tap('thinking', (e: { actionId?: string; thought?: string }) => {
      if (!e.actionId || typeof e.thought !== 'string' || !runs.has(e.actionId)) return;
      fire(runs.get(e.actionId)!, { type: 'thinking', text: e.thought.slice(0, THOUGHT_CAP) });
    });
    ctx.hooks.tap('modelCall', (c: { actionId?: string; inputTokens: number; outputTokens: number }) => {
      if (!c.actionId || !ours(c.actionId)) return;
      const r = runOf(c.actionId);
      r.usage.input += Number.isFinite(c.inputTokens) ? c.inputTokens : 0;
      r.usage.output += Number.isFinite(c.outputTokens) ? c.outputTokens : 0;
    });
    ctx.hooks.tap('actionSettled', (a: Action, o: { status: string; detail?: string }) => {
      if (a.source !== CHANNEL) return;
      if (o.status === 'completed') {
        const r = runOf(a.id);
        const text = r.replies.length ? r.replies.join('\n\n') : (o.detail ?? a.result ?? '');
        finish(a.id, { ok: true, text });
      } else if (o.status === 'failed') {
        const why = String(o.detail ?? a.error ?? 'unknown error')
          .split('\n')[0]!
          .slice(0, 300);
        finish(a.id, { ok: false, status: 500, message: `The agent could not carry out this request: ${why}`, code: 'agent_failed' });
      } else if (o.status === 'removed') {
        finish(a.id, { ok: false, status: 500, message: 'The request was cancelled before the agent answered it.', code: 'cancelled' });
      }
    });

    ctx.provide('gateway:routes:openai-api', routes(ctx, { runOf, runs, byKey, rememberKey, started }));
    return {};
  },
});

interface State {
  runOf(actionId: string): Run;
  runs: Map<string, Run>;
  byKey: Map<string, string>;
  rememberKey(key: string, actionId: string): void;
  started: number;
}

/** The OpenAPI document lists these routes; their bodies are OpenAI's (https://platform.openai.com/docs/api-reference/chat). */
const errorSchema = Type.Unknown();

function routes(ctx: PluginContext<typeof manifest>, st: State): GatewayRoutesCapability {
  const notFound = (id: string) => ({
    status: 404,
    body: errorBody(`The model "${id.slice(0, 100)}" does not exist: use "${MODEL}".`, 'not_found_error', 'model', 'model_not_found'),
  });
  return {
    routes: [
      {
        method: 'GET',
        url: '/v1/models',
        summary: 'The models (OpenAI-compatible): the Keel agent',
        description: 'OpenAI\'s model list with one model, "keel": the agent with its skills and memory (docs/openai.md).',
        schema: { response: { 200: errorSchema, 401: errorSchema } },
        handler: () => ({ body: { object: 'list', data: [modelObject(st.started)] } }),
      },
      {
        method: 'GET',
        url: '/v1/models/:model',
        summary: 'One model (OpenAI-compatible)',
        description: '"keel", or 404 with code model_not_found in OpenAI\'s error shape.',
        schema: { params: Type.Object({ model: Type.String() }), response: { 200: errorSchema, 404: errorSchema } },
        handler: ({ params }) => (params.model === MODEL ? { body: modelObject(st.started) } : notFound(params.model ?? '')),
      },
      {
        method: 'POST',
        url: '/v1/chat/completions',
        summary: 'A chat completion by the Keel agent (OpenAI-compatible)',
        description:
          'The last user message becomes an action of channel openai-api, run as the operator; the answer is a chat.completion, or with ' +
          '"stream": true server-sent chat.completion.chunk events ending with data: [DONE]. Errors are in OpenAI\'s shape (docs/openai.md).',
        schema: { response: { 200: errorSchema, 400: errorSchema, 404: errorSchema, 500: errorSchema, 504: errorSchema } },
        stream: (req) => chatCompletion(ctx, st, req),
      },
    ],
  };
}

/** The action queued for an inbound message id of this channel, from the queue's pending and kept history. */
function actionOfMessage(ctx: PluginContext, messageId: string): string | undefined {
  const { pending, completed, failed } = ctx.queue.list();
  for (const a of [...pending, ...completed, ...failed]) {
    const inb = a.metadata.inbound as { channel?: unknown; messageId?: unknown } | undefined;
    if (a.source === CHANNEL && inb?.messageId === messageId) return a.id;
  }
  return undefined;
}

async function chatCompletion(
  ctx: PluginContext<typeof manifest>,
  st: State,
  req: GatewayRequest & { raw: IncomingMessage; res: ServerResponse },
): Promise<void> {
  const { res } = req;
  let parsed: ReturnType<typeof parseRequest>;
  try {
    parsed = parseRequest(req.body);
  } catch (e) {
    if (e instanceof RequestError) return sendJson(res, e.status, errorBody(e.message, e.type, e.param, e.code));
    throw e;
  }
  const idem = header(req, 'idempotency-key');
  if (idem !== undefined && !IDEMPOTENCY_KEY.test(idem))
    return sendJson(res, 400, errorBody('Idempotency-Key must be 1 to 200 visible ASCII characters.', 'invalid_request_error'));
  const conv = header(req, 'x-keel-conversation');
  if (conv !== undefined && !CONVERSATION.test(conv))
    return sendJson(res, 400, errorBody('X-Keel-Conversation must be 1 to 64 letters, digits or _ . : -', 'invalid_request_error'));

  // Nobody would ever take the action (no `keel run` on this home, no runner on a shared queue): say so now
  // rather than after openaiApiTimeoutSeconds.
  const info = ctx.use('kernel:info');
  if (info && !info.agentRunning())
    return sendJson(
      res,
      503,
      errorBody(
        'No agent is running for this Keel: start it (`keel run`, or `keel gateway --with-agent`) and send the request again.',
        'server_error',
        null,
        'agent_not_running',
      ),
    );

  // Who asks: the gateway key's holder is the operator (admin); anyone else the gateway let in is a plain user.
  const userId = parsed.user ?? (req.caller.operator ? 'operator' : 'remote');
  const messageId = idem ? `idem:${idem}` : `oa_${randomUUID()}`;
  let actionId: string | undefined = idem ? st.byKey.get(idem) : undefined;
  if (!actionId) {
    const out = await receive(
      ctx,
      { channel: CHANNEL, messageId, chatId: conv ?? `oa_${randomUUID().slice(0, 12)}`, userId, text: parsed.task },
      { autoReply: true, operator: req.caller.operator },
    );
    // A key this process no longer remembers (a restart): the queue still knows the action it queued.
    if (out.kind === 'ignored' && out.reason === 'duplicate' && idem) actionId = actionOfMessage(ctx, messageId);
    if (out.kind === 'ignored' && !actionId) {
      const why =
        out.reason === 'dropped-by-hook'
          ? 'a messageIn hook dropped the message'
          : out.reason === 'duplicate'
            ? 'this Idempotency-Key was used before and its answer is no longer kept'
            : out.reason;
      return sendJson(res, 400, errorBody(`Nothing was queued: ${why}.`, 'invalid_request_error', null, out.reason));
    }
    if (out.kind !== 'ignored') actionId = out.kind === 'queued' ? out.action.id : out.actionId;
    if (idem && actionId) st.rememberKey(idem, actionId);
  }
  if (!actionId) return sendJson(res, 500, errorBody('Nothing was queued.', 'server_error'));
  const id = `chatcmpl-${actionId}`;
  const created = Math.floor(Date.now() / 1000);
  const run = st.runOf(actionId);
  // A retry of an idempotent request whose action settled while no request waited for it: answer from the queue.
  if (!run.outcome) {
    const a = ctx.queue.get(actionId);
    if (a?.status === 'completed') run.outcome = { ok: true, text: run.replies.join('\n\n') || (a.result ?? '') };
    else if (a?.status === 'failed')
      run.outcome = {
        ok: false,
        status: 500,
        message: `The agent could not carry out this request: ${String(a.error ?? 'unknown error')
          .split('\n')[0]!
          .slice(0, 300)}`,
        code: 'agent_failed',
      };
  }

  const timeoutMs = ctx.config.get('openaiApiTimeoutSeconds') * 1000;
  const cancel = (reason: string) => {
    void ctx.queue
      .cancel(actionId, reason)
      .catch((e: unknown) => ctx.log.warn(`openai-api: could not cancel ${actionId}: ${errorMessage(e)}`));
  };
  const usage = (): Usage => ({
    prompt_tokens: run.usage.input,
    completion_tokens: run.usage.output,
    total_tokens: run.usage.input + run.usage.output,
  });

  await new Promise<void>((resolve) => {
    const stream = parsed.stream ? sse(res) : undefined;
    let ended = false;
    const timer = setTimeout(() => {
      cancel(`no answer within openaiApiTimeoutSeconds (${timeoutMs / 1000} s)`);
      answer({
        ok: false,
        status: 504,
        message: `The agent did not answer within ${timeoutMs / 1000} seconds (openaiApiTimeoutSeconds); the action was cancelled.`,
        code: 'timeout',
      });
    }, timeoutMs);
    timer.unref?.();
    const keepalive = stream ? setInterval(() => stream.comment('keep-alive'), KEEPALIVE_MS) : undefined;
    keepalive?.unref?.();
    // The agent may run in another process on this home (`keel gateway` beside `keel run`), where this process's
    // hooks never hear of the action: the queue, which picks up the other process's changes, tells its end.
    const poll = setInterval(() => {
      if (run.outcome) return;
      const a = ctx.queue.get(actionId);
      if (a?.status === 'completed') answer({ ok: true, text: run.replies.join('\n\n') || (a.result ?? '') });
      else if (a?.status === 'failed')
        answer({
          ok: false,
          status: 500,
          message: `The agent could not carry out this request: ${firstLine(a.error)}`,
          code: 'agent_failed',
        });
      else if (!a)
        answer({ ok: false, status: 500, message: 'The request was cancelled before the agent answered it.', code: 'cancelled' });
    }, POLL_MS);
    poll.unref?.();
    const cleanup = () => {
      ended = true;
      clearTimeout(timer);
      clearInterval(poll);
      if (keepalive) clearInterval(keepalive);
      run.listeners.delete(listener);
      if (run.outcome && run.listeners.size === 0) st.runs.delete(actionId);
      resolve();
    };
    function answer(o: NonNullable<Run['outcome']>) {
      if (ended) return;
      if (stream) {
        if (o.ok) {
          if (o.text) stream.data(chunk({ id, created, delta: { content: o.text } }));
          stream.data(chunk({ id, created, delta: {}, finish: 'stop', ...(parsed.includeUsage ? { usage: null } : {}) }));
          if (parsed.includeUsage) stream.data(chunk({ id, created, usage: usage() }));
          stream.done();
        } else {
          // OpenAI clients raise an error event in the stream as an API error.
          stream.data(errorBody(o.message, o.status === 504 ? 'timeout' : 'server_error', null, o.code));
          stream.end();
        }
      } else if (o.ok) sendJson(res, 200, completion({ id, created, text: o.text, usage: usage() }));
      else sendJson(res, o.status, errorBody(o.message, o.status === 504 ? 'timeout' : 'server_error', null, o.code));
      cleanup();
    }
    function listener(e: RunEvent) {
      if (e.type === 'thinking') stream?.data(chunk({ id, created, delta: { reasoning_content: `${e.text}\n` } }));
      else if (run.outcome) answer(run.outcome);
    }
    // The client went away before the answer: the action stops (a response that closes after it ended is done).
    res.once('close', () => {
      if (ended) return;
      cancel('the OpenAI client disconnected');
      cleanup();
    });
    if (stream) stream.data(chunk({ id, created, delta: { role: 'assistant', content: '' } }));
    run.listeners.add(listener);
    if (run.outcome) answer(run.outcome);
  });
}
