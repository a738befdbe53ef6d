/**
 * A loopback server that speaks the Anthropic Messages API (`POST /v1/messages`, JSON, non-streaming) as the real
 * @anthropic-ai/sdk uses it, scripted per test: each request takes the next scripted reply (a message, a 429 with
 * Retry-After, a 500, a connection reset...) and is recorded for assertions.
 *
 * It also exports the scripted-server core the Bedrock and Ollama fakes reuse.
 */
import { createServer as createHttp1Server, type IncomingHttpHeaders, type ServerResponse, type IncomingMessage } from 'node:http';
import { createServer as createHttp2Server, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2';
import type { AddressInfo } from 'node:net';

/** One scripted reply. */
export interface Scripted {
  status?: number;
  headers?: Record<string, string>;
  /** JSON body (serialised) or a raw string. */
  body?: unknown;
  /** Drop the connection without answering (a reset). */
  reset?: boolean;
  /** Never answer (for abort and timeout tests); the server ends it at close. */
  hang?: boolean;
}

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** Parsed JSON body (or the raw text when it is not JSON). */
  body: any;
}

export interface ScriptedServer {
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** Queue replies, answered in order; an unscripted request gets 418 (not retried) so a test fails clearly. */
  script(...replies: Scripted[]): void;
  close(): Promise<void>;
}

type AnyReq = IncomingMessage | Http2ServerRequest;
type AnyRes = ServerResponse | Http2ServerResponse;

/** A scripted JSON server on 127.0.0.1, port 0. `http2` serves cleartext HTTP/2 (what the AWS client speaks). */
export async function startScriptedServer(
  opts: { http2?: boolean; unscripted?: (req: RecordedRequest) => Scripted } = {},
): Promise<ScriptedServer> {
  const queue: Scripted[] = [];
  const requests: RecordedRequest[] = [];
  const hanging = new Set<AnyRes>();

  const handle = (req: AnyReq, res: AnyRes) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        /* keep the text */
      }
      const rec: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
      requests.push(rec);
      const reply = queue.shift() ?? opts.unscripted?.(rec) ?? { status: 418, body: { error: 'no scripted response' } };
      if (reply.reset) {
        if ('stream' in req && req.stream) req.stream.close(2 /* NGHTTP2_INTERNAL_ERROR */);
        else (req as IncomingMessage).socket.destroy();
        return;
      }
      if (reply.hang) {
        hanging.add(res);
        return;
      }
      const payload = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? {});
      (res as ServerResponse).writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
      (res as ServerResponse).end(payload);
    });
  };

  const server = opts.http2 ? createHttp2Server(handle) : createHttp1Server(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const sessions = new Set<{ destroy(): void }>();
  server.on(opts.http2 ? 'session' : 'connection', (s: { destroy(): void; on(e: string, f: () => void): void }) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    script: (...replies) => void queue.push(...replies),
    close: async () => {
      for (const r of hanging) r.destroy?.();
      for (const s of sessions) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ------------------------------------------------------------------ Anthropic replies

/** A Messages API reply. */
export function anthropicMessage(o: {
  text?: string;
  toolUses?: Array<{ id: string; name: string; input: Record<string, unknown> }>;
  model?: string;
  inputTokens?: number;
  outputTokens?: number;
  stopReason?: string;
}): Scripted {
  const content: unknown[] = [];
  if (o.text !== undefined) content.push({ type: 'text', text: o.text });
  for (const t of o.toolUses ?? []) content.push({ type: 'tool_use', id: t.id, name: t.name, input: t.input });
  return {
    status: 200,
    headers: { 'request-id': 'req_test' },
    body: {
      id: 'msg_test',
      type: 'message',
      role: 'assistant',
      model: o.model ?? 'claude-test-1',
      content,
      stop_reason: o.stopReason ?? (o.toolUses?.length ? 'tool_use' : 'end_turn'),
      stop_sequence: null,
      usage: { input_tokens: o.inputTokens ?? 11, output_tokens: o.outputTokens ?? 7 },
    },
  };
}

/** An Anthropic error reply (`{type:"error", error:{type, message}}`). */
export function anthropicError(status: number, type: string, message: string, headers: Record<string, string> = {}): Scripted {
  return { status, headers, body: { type: 'error', error: { type, message } } };
}

export async function startAnthropicServer(): Promise<ScriptedServer> {
  return startScriptedServer();
}
