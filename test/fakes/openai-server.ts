/**
 * A loopback server (127.0.0.1, port 0) speaking the OpenAI REST wire protocol the `openai` client uses:
 * POST /chat/completions (non-streaming), /embeddings, /images/generations (b64_json), /audio/speech (binary),
 * /audio/transcriptions (multipart upload, recorded as `{ fields, files }`; answers FAKE_TRANSCRIPT).
 * Each test scripts the replies (a queue; status codes, Retry-After, hangs) and reads the recorded requests.
 * Also the scripted-server core the Gemini fake builds on.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeReply {
  status?: number;
  headers?: Record<string, string>;
  /** JSON body (sent with content-type application/json). */
  json?: unknown;
  /** Raw body (with `headers['content-type']`). */
  body?: Buffer | string;
  /** Never answer (to test timeouts and cancellation); the socket closes when the server does. */
  hang?: boolean;
  /** Destroy the connection without an answer (a reset). */
  reset?: boolean;
  /** Only for requests whose path contains this; others get the defaults (unset: the next request). */
  match?: string;
}

export interface RecordedRequest {
  method: string;
  /** Path and query as received. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body, a multipart form as `{ fields, files }`, or the raw text. */
  body: any;
}

export interface ScriptedServer {
  /** Base URL of the server (with the prefix given, e.g. `http://127.0.0.1:1234/v1`). */
  url: string;
  requests: RecordedRequest[];
  /** Queue replies, answered in order; when the queue is empty the server's defaults answer. */
  script(...replies: FakeReply[]): void;
  close(): Promise<void>;
}

export async function startScriptedServer(prefix: string, defaults: (req: RecordedRequest) => FakeReply): Promise<ScriptedServer> {
  const queue: FakeReply[] = [];
  const requests: RecordedRequest[] = [];
  const send = (res: ServerResponse, r: FakeReply) => {
    const status = r.status ?? 200;
    if (r.json !== undefined) {
      const text = JSON.stringify(r.json);
      res.writeHead(status, { 'content-type': 'application/json', ...r.headers });
      res.end(text);
    } else {
      res.writeHead(status, { 'content-type': 'application/octet-stream', ...r.headers });
      res.end(r.body ?? '');
    }
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const buf = Buffer.concat(chunks);
      const raw = buf.toString('utf8');
      let body: unknown = raw;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        /* keep raw */
      }
      const type = String(req.headers['content-type'] ?? '');
      if (type.startsWith('multipart/form-data')) body = await parseMultipart(buf, type).catch(() => raw);
      const rec: RecordedRequest = { method: req.method ?? 'GET', url: req.url ?? '/', headers: { ...req.headers }, body };
      requests.push(rec);
      const i = queue.findIndex((q) => !q.match || rec.url.includes(q.match));
      const reply = i >= 0 ? queue.splice(i, 1)[0]! : defaults(rec);
      if (reply.hang) return;
      if (reply.reset) {
        req.socket.destroy();
        return;
      }
      send(res, reply);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${prefix}`,
    requests,
    script: (...r) => void queue.push(...r),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** An uploaded file of a multipart request. */
export interface UploadedFile {
  name: string;
  type: string;
  data: Buffer;
}

/** Parses a multipart/form-data body with the platform's own parser (undici's `Response.formData`). */
async function parseMultipart(
  buf: Buffer,
  contentType: string,
): Promise<{ fields: Record<string, string>; files: Record<string, UploadedFile> }> {
  const form = await new Response(new Uint8Array(buf), { headers: { 'content-type': contentType } }).formData();
  const fields: Record<string, string> = {};
  const files: Record<string, UploadedFile> = {};
  for (const [k, v] of form.entries()) {
    if (typeof v === 'string') fields[k] = v;
    else files[k] = { name: v.name, type: v.type, data: Buffer.from(await v.arrayBuffer()) };
  }
  return { fields, files };
}

// ---------------------------------------------------------------- OpenAI wire replies

export interface FakeToolCall {
  id?: string;
  name: string;
  /** The arguments string exactly as the model sends it (may be invalid JSON). */
  arguments: string;
}

/** A non-streaming chat completion. */
export function chatReply(o: {
  text?: string | null;
  toolCalls?: FakeToolCall[];
  usage?: { prompt: number; completion: number };
  model?: string;
  finish?: string;
}): FakeReply {
  const usage = o.usage ?? { prompt: 11, completion: 7 };
  return {
    json: {
      id: 'chatcmpl-fake',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: o.model ?? 'fake-model',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: o.text === undefined ? (o.toolCalls?.length ? null : 'hello from the fake') : o.text,
            ...(o.toolCalls?.length
              ? {
                  tool_calls: o.toolCalls.map((t, i) => ({
                    id: t.id ?? `call_${i + 1}`,
                    type: 'function',
                    function: { name: t.name, arguments: t.arguments },
                  })),
                }
              : {}),
          },
          finish_reason: o.finish ?? (o.toolCalls?.length ? 'tool_calls' : 'stop'),
        },
      ],
      usage: { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion },
    },
  };
}

/** An error body as OpenAI sends it. */
export function errorReply(status: number, message = `fake error ${status}`, headers: Record<string, string> = {}): FakeReply {
  return { status, headers, json: { error: { message, type: 'fake_error', code: null, param: null } } };
}

/** Bytes of a 1x1 PNG. */
export const PNG_1x1 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
/** What the fake's speech-to-text hears in any audio. */
export const FAKE_TRANSCRIPT = 'please book the meeting room for Friday';
/** Bytes standing for an MP3. */
export const FAKE_MP3 = Buffer.from('ID3\u0004\u0000fake-mp3-bytes', 'latin1');
/** What the fake answers `response_format: 'opus'` with: an Ogg page header, then filler. */
export const FAKE_OGG_OPUS = Buffer.from('OggS\u0000\u0002fake-opus-bytes', 'latin1');

function openaiDefaults(req: RecordedRequest): FakeReply {
  const path = req.url.split('?')[0]!;
  if (path.endsWith('/chat/completions')) return chatReply({ model: req.body?.model });
  if (path.endsWith('/embeddings')) {
    const input: string[] = Array.isArray(req.body?.input) ? req.body.input : [String(req.body?.input)];
    return {
      json: {
        object: 'list',
        model: req.body?.model,
        data: input.map((t, i) => ({ object: 'embedding', index: i, embedding: [t.length, i, 0.5] })),
        usage: { prompt_tokens: input.length * 2, total_tokens: input.length * 2 },
      },
    };
  }
  if (path.endsWith('/images/generations')) {
    return { json: { created: 1_700_000_000, data: [{ b64_json: PNG_1x1.toString('base64') }] } };
  }
  if (path.endsWith('/audio/speech'))
    return req.body?.response_format === 'opus'
      ? { headers: { 'content-type': 'audio/ogg' }, body: FAKE_OGG_OPUS }
      : { headers: { 'content-type': 'audio/mpeg' }, body: FAKE_MP3 };
  if (path.endsWith('/audio/transcriptions')) {
    const file = req.body?.files?.file as UploadedFile | undefined;
    if (!file?.data.length) return errorReply(400, 'file is required');
    return { json: { text: FAKE_TRANSCRIPT } };
  }
  return errorReply(404, `no route ${req.method} ${path}`);
}

/** Starts the OpenAI fake; its `url` ends in `/v1`, ready for a base-URL key. */
export function startOpenAIFake(): Promise<ScriptedServer> {
  return startScriptedServer('/v1', openaiDefaults);
}
