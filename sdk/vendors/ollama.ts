/**
 * Ollama adapter (providerG) over the official `ollama` package, imported only when the first call is made:
 * `/api/chat` non-streaming with native tools (tool calls come back with `function.arguments` as an object, tool
 * results go back as `role: "tool"` with `tool_name`), images for vision models, `/api/embed` for embeddings.
 *
 * The package has no retries of its own and no per-call signal for non-streaming calls, so each attempt gets a
 * client whose `fetch` carries the attempt's signal (the caller's signal plus the timeout of
 * {@link callWithRetry}); that fetch also keeps the reply's headers so a Retry-After is honoured. No key is sent.
 */
import type { ChatMessage, ChatRequest, ChatResponse, EmbedRequest, TokenUsage, ToolCall } from '../providers.js';
import { callWithRetry, parseToolArguments, toProviderError } from './common.js';

export interface OllamaSettings {
  /** Provider id used in errors (`providerG`). */
  provider: string;
  /** Default http://127.0.0.1:11434. */
  apiUrl?: string;
  timeoutMs?: number;
  retries?: number;
  /** First backoff in ms (tests make it small). */
  baseMs?: number;
}

/** Embedding model used when the request names none. */
export const DEFAULT_OLLAMA_EMBED_MODEL = 'nomic-embed-text';

type OllamaModule = typeof import('ollama');
let sdk: Promise<OllamaModule> | undefined;

interface VendorMessage {
  role: string;
  content: string;
  images?: Uint8Array[];
  tool_calls?: Array<{ function: { name: string; arguments: Record<string, unknown> } }>;
  tool_name?: string;
}

/** Keel messages → Ollama chat messages. */
export function toOllamaMessages(messages: ChatMessage[]): VendorMessage[] {
  return messages.map((m) => {
    const out: VendorMessage = { role: m.role, content: m.content };
    // Bytes, not strings: the Node build of the package would read a string that names an existing file.
    if (m.role === 'user' && m.images?.length) out.images = m.images.map((i) => new Uint8Array(Buffer.from(i.base64, 'base64')));
    if (m.role === 'assistant' && m.toolCalls?.length) {
      out.tool_calls = m.toolCalls.map((c) => ({ function: { name: c.name, arguments: c.arguments ?? {} } }));
    }
    if (m.role === 'tool' && m.name) out.tool_name = m.name;
    return out;
  });
}

/** Runs `fn` with an Ollama client bound to one attempt's signal, under the shared retry policy. */
async function call<T>(
  s: OllamaSettings,
  signal: AbortSignal | undefined,
  timeoutMs: number | undefined,
  fn: (client: InstanceType<OllamaModule['Ollama']>) => Promise<T>,
): Promise<T> {
  const { Ollama } = await (sdk ??= import('ollama'));
  return callWithRetry(
    s.provider,
    async (attemptSignal) => {
      let lastHeaders: Headers | undefined;
      const client = new Ollama({
        host: s.apiUrl || 'http://127.0.0.1:11434',
        fetch: async (input, init) => {
          const res = await fetch(input, { ...init, signal: attemptSignal });
          lastHeaders = res.headers;
          return res;
        },
      });
      try {
        return await fn(client);
      } catch (e) {
        const status = (e as { status_code?: unknown }).status_code;
        if (e && typeof e === 'object' && typeof status === 'number') {
          throw toProviderError(s.provider, { status, headers: lastHeaders, message: (e as { error?: string }).error ?? '' });
        }
        throw e;
      }
    },
    {
      ...(signal ? { signal } : {}),
      ...(timeoutMs ? { timeoutMs } : {}),
      ...(s.retries !== undefined ? { retries: s.retries } : {}),
      ...(s.baseMs !== undefined ? { baseMs: s.baseMs } : {}),
    },
  );
}

/** One chat turn through /api/chat (non-streaming). */
export async function ollamaChat(s: OllamaSettings, req: ChatRequest): Promise<ChatResponse> {
  const body: Record<string, unknown> = { model: req.model, messages: toOllamaMessages(req.messages), stream: false };
  const options: Record<string, number> = {};
  if (req.temperature !== undefined) options.temperature = req.temperature;
  if (req.maxTokens !== undefined) options.num_predict = req.maxTokens;
  if (Object.keys(options).length) body.options = options;
  if (req.tools?.length) {
    body.tools = req.tools.map((t) => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: { type: 'object', ...t.parameters } },
    }));
  }
  const res = await call(
    s,
    req.signal,
    req.timeoutMs ?? s.timeoutMs,
    (c) =>
      c.chat(body as never) as unknown as Promise<{
        model?: string;
        message?: { content?: string; tool_calls?: Array<{ id?: string; function?: { name?: string; arguments?: unknown } }> };
        done_reason?: string;
        prompt_eval_count?: number;
        eval_count?: number;
      }>,
  );
  const toolCalls: ToolCall[] = (res.message?.tool_calls ?? []).map((c, i) => ({
    id: typeof c.id === 'string' && c.id ? c.id : `call_${i}`,
    name: c.function?.name ?? '',
    ...parseToolArguments(c.function?.arguments),
  }));
  return {
    text: res.message?.content ?? '',
    toolCalls,
    usage: { inputTokens: res.prompt_eval_count ?? 0, outputTokens: res.eval_count ?? 0 },
    model: res.model ?? req.model,
    ...(res.done_reason ? { finishReason: res.done_reason } : {}),
  };
}

/** Embeddings through /api/embed (default model {@link DEFAULT_OLLAMA_EMBED_MODEL}). */
export async function ollamaEmbed(
  s: OllamaSettings,
  req: EmbedRequest,
): Promise<{ vectors: number[][]; usage?: TokenUsage; model: string }> {
  const model = req.model || DEFAULT_OLLAMA_EMBED_MODEL;
  const res = await call(s, req.signal, s.timeoutMs, (c) => c.embed({ model, input: req.texts }));
  return {
    vectors: res.embeddings,
    ...(typeof res.prompt_eval_count === 'number' ? { usage: { inputTokens: res.prompt_eval_count, outputTokens: 0 } } : {}),
    model: res.model || model,
  };
}
