/**
 * OpenAI's wire shapes: the error body, `chat.completion`, `chat.completion.chunk`, the model list, and the
 * server-sent-events framing of a streamed answer (`data: <json>` lines, ending with `data: [DONE]`).
 */
import type { ServerResponse } from 'node:http';
import { MODEL } from './request.js';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** OpenAI's error body: clients show `error.message`. */
export function errorBody(message: string, type: string, param: string | null = null, code: string | null = null) {
  return { error: { message, type, param, code } };
}

/** The one model: created is the time the plugin started (OpenAI gives the model's release date). */
export function modelObject(created: number) {
  return { id: MODEL, object: 'model', created, owned_by: 'keel' };
}

export function completion(o: { id: string; created: number; text: string; usage: Usage }) {
  return {
    id: o.id,
    object: 'chat.completion',
    created: o.created,
    model: MODEL,
    system_fingerprint: null,
    choices: [{ index: 0, message: { role: 'assistant', content: o.text, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: o.usage,
  };
}

export function chunk(o: { id: string; created: number; delta?: Record<string, unknown>; finish?: string | null; usage?: Usage | null }) {
  return {
    id: o.id,
    object: 'chat.completion.chunk',
    created: o.created,
    model: MODEL,
    system_fingerprint: null,
    choices: !o.delta ? [] : [{ index: 0, delta: o.delta, logprobs: null, finish_reason: o.finish ?? null }],
    ...(o.usage !== undefined ? { usage: o.usage } : {}),
  };
}

/** A server-sent-events writer on a raw response. */
export function sse(res: ServerResponse) {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    // Reverse proxies (nginx) otherwise hold the events back until the answer ends.
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
  const open = () => !res.writableEnded && !res.destroyed;
  return {
    data(value: unknown) {
      if (open()) res.write(`data: ${JSON.stringify(value)}\n\n`);
    },
    /** A comment line: keeps idle proxies and clients from closing a long wait. */
    comment(text: string) {
      if (open()) res.write(`: ${text}\n\n`);
    },
    done() {
      if (open()) res.end('data: [DONE]\n\n');
    },
    end() {
      if (open()) res.end();
    },
  };
}

/** A JSON answer on a raw response (a stream route writes its own). */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}
