/**
 * Error replies: every error is JSON `{error, message}` with the right status, never a 500 for bad input.
 */
import { type IncomingMessage, STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from '../../../sdk/index.js';

export interface ErrorBody {
  error: string;
  message: string;
  /** The KEEL_E_* code, when the error came from a skill call. */
  code?: string;
}

/** `{error, message}` with the reason phrase of `status` as `error` (and `code` when given). */
export function errorBody(status: number, message: string, code?: string): ErrorBody {
  return { error: STATUS_CODES[status] ?? 'Error', message, ...(code ? { code } : {}) };
}

export function sendError(reply: FastifyReply, status: number, message: string, code?: string): FastifyReply {
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send(errorBody(status, message, code));
}

/** HTTP status for a Keel error code (KEEL_E_*) raised while serving a request. */
export function statusForCode(code: string | undefined): number | undefined {
  switch (code) {
    case 'KEEL_E_CONFIG_UNKNOWN_KEY':
    case 'KEEL_E_SKILL_UNKNOWN':
    case 'KEEL_E_ACTION_NOT_FOUND':
    case 'KEEL_E_APPROVAL_NOT_FOUND':
      return 404;
    case 'KEEL_E_CONFIG_INVALID_VALUE':
    case 'KEEL_E_SKILL_INVALID_ARGS':
    case 'KEEL_E_INVALID_INPUT':
    case 'KEEL_E_TASK_EMPTY':
    case 'KEEL_E_PRIORITY_INVALID':
      return 400;
    case 'KEEL_E_CONFIG_LOCKED':
    case 'KEEL_E_FORBIDDEN':
    case 'KEEL_E_SAFE_MODE':
    case 'KEEL_E_SKILL_VETOED':
    case 'KEEL_E_APPROVAL_FORBIDDEN':
      return 403;
    case 'KEEL_E_SKILL_NO_HANDLER':
    case 'KEEL_E_QUEUE_CLOSED':
    case 'KEEL_E_QUEUE_LOCKED':
    case 'KEEL_E_QUEUE_UNREACHABLE':
      return 503;
    default:
      return undefined;
  }
}

type AnyError = FastifyError & { status?: number; validationContext?: string };

/** Fastify's request-handling errors (content type, body size, JSON syntax, schema) mapped to the gateway's bodies. */
function describe(err: AnyError, bodyLimit: number): { status: number; message: string } | undefined {
  if (err.validation) {
    // Fastify's message names the part and the field: `body/priority must be number`.
    return { status: 400, message: `Invalid request: ${err.message}.` };
  }
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, message: 'Unsupported Content-Type: send JSON with the header Content-Type: application/json.' };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return {
        status: 413,
        message: `Request body too large: the limit is ${sizeInWords(bodyLimit)}; send a smaller body or raise the setting gatewayBodyLimit.`,
      };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, message: 'Empty JSON body: Content-Type is application/json but the body is empty; send a JSON object.' };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return { status: 400, message: `Malformed JSON body: ${err.message}` };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { status: 400, message: 'Content-Length does not match the body.' };
    default:
      break;
  }
  if (err instanceof SyntaxError) return { status: 400, message: `Malformed JSON body: ${err.message}` };
  const keel = statusForCode(typeof err.code === 'string' ? err.code : undefined);
  if (keel) return { status: keel, message: err.message };
  const status = err.statusCode ?? err.status;
  if (typeof status === 'number' && status >= 400 && status < 500)
    return { status, message: err.message || STATUS_CODES[status] || 'Bad request' };
  return undefined;
}

/** `1 MiB (1048576 bytes)`, `4 KiB (4096 bytes)` or `1500 bytes`. */
function sizeInWords(bytes: number): string {
  if (bytes >= MiB && bytes % MiB === 0) return `${bytes / MiB} MiB (${bytes} bytes)`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB (${bytes} bytes)`;
  return `${bytes} bytes`;
}

const MiB = 1_048_576;
/** How much of a too-large body is read and thrown away (past the limit) so that the client sees the 413. */
export const DISCARD_MAX_BYTES = 8 * MiB;
/** How long a too-large body is read and thrown away at most (a slow client is then cut off). */
export const DISCARD_MAX_MS = 10_000;

/**
 * Reads and throws away the rest of a request body that is over the limit, up to {@link DISCARD_MAX_BYTES} past
 * the limit or {@link DISCARD_MAX_MS}. A client still sending its body when the server answers and closes gets a
 * reset instead of the answer (Node's fetch says "fetch failed", browsers a network error), so the 413 goes out
 * only once the body is in; a body larger than the bound is cut off (the socket closes) as before.
 * Resolves true when the whole body was read.
 */
function discardBody(raw: IncomingMessage, bodyLimit: number): Promise<boolean> {
  if (raw.complete || raw.readableEnded) return Promise.resolve(true);
  if (raw.destroyed) return Promise.resolve(false);
  const max = bodyLimit + DISCARD_MAX_BYTES;
  const declared = Number(raw.headers['content-length']);
  if (Number.isFinite(declared) && declared > max) return Promise.resolve(false);
  return new Promise((resolve) => {
    // Fastify stopped counting when the limit was passed; what it read is at most the limit.
    let seen = 0;
    const done = (whole: boolean) => {
      clearTimeout(timer);
      raw.off('data', onData).off('end', onEnd).off('error', onFail).off('close', onFail);
      resolve(whole);
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > max) done(false);
    };
    const onEnd = () => done(true);
    const onFail = () => done(false);
    const timer = setTimeout(() => done(false), DISCARD_MAX_MS);
    timer.unref();
    raw.on('data', onData).on('end', onEnd).on('error', onFail).on('close', onFail);
    raw.resume();
  });
}

/** The gateway's error handler: known client errors keep their status; anything else is a logged 500 without details. */
export function errorHandler(log: Logger, bodyLimit: number) {
  return async (err: AnyError, req: FastifyRequest, reply: FastifyReply) => {
    const d = describe(err, bodyLimit);
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') await discardBody(req.raw, bodyLimit);
    if (d) {
      // The static file server refuses odd paths with 403; outside /api every refusal is a plain 404.
      const path = req.url.split('?')[0] ?? '';
      if (d.status === 403 && !path.startsWith('/api') && !err.code?.startsWith('KEEL_E_')) return sendError(reply, 404, 'Not found.');
      return sendError(reply, d.status, d.message);
    }
    log.error(`gateway: ${req.method} ${req.url.split('?')[0]} failed: ${err.stack ?? err.message}`);
    return sendError(reply, 500, 'The gateway could not complete the request; the details are in the Keel log.');
  };
}

/** 404 for every unknown route. */
export function notFound(req: FastifyRequest, reply: FastifyReply) {
  const path = req.url.split('?')[0] ?? '';
  return sendError(reply, 404, `No route ${req.method} ${path.slice(0, 200)}. The API is described at /api/openapi.json.`);
}

interface AjvLikeError {
  instancePath?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** Validation messages that name the field: `body/priority must be number`, `body must NOT have additional property 'x'`. */
export function schemaErrorFormatter(errs: AjvLikeError[], dataVar: string): Error {
  const e = errs[0] ?? {};
  const where = `${dataVar}${e.instancePath ?? ''}`;
  const p = e.params ?? {};
  let msg = e.message ?? 'is invalid';
  if (typeof p.additionalProperty === 'string') msg = `must NOT have the unknown property '${p.additionalProperty}'`;
  else if (typeof p.missingProperty === 'string') msg = `must have the required property '${p.missingProperty}'`;
  else if (Array.isArray(p.allowedValues)) msg = `must be one of ${p.allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  return new Error(`${where} ${msg}`);
}
