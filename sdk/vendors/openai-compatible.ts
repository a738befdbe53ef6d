/**
 * One adapter for every OpenAI-compatible vendor (providerA OpenAI, providerE OpenRouter, providerF NVIDIA NIM,
 * providerH..K Mistral, Groq, xAI, Cerebras), on the `openai` client with the vendor's base URL.
 *
 * The `openai` package is imported only on the first call, so loading this module (and listing plugins) stays
 * cheap. The client runs with `maxRetries: 0`: the retry policy is {@link callWithRetry}'s, and only that.
 */
import type {
  ChatMessage,
  ChatRequest,
  ChatResponse,
  EmbedRequest,
  ImageRequest,
  ProviderCapability,
  SpeechRequest,
  ToolCall,
  TranscriptionRequest,
  TokenUsage,
} from '../providers.js';
import { ProviderError } from '../providers.js';
import { badRequest, callWithRetry, missingKey, parseToolArguments, readAudio, type ProviderSettings } from './common.js';

/** Voices of OpenAI's speech endpoint. */
export const OPENAI_VOICES = ['alloy', 'echo', 'fable', 'onyx', 'nova', 'shimmer'];

export interface OpenAICompatibleOptions {
  /** Provider id (`providerA`). */
  id: string;
  /** Reads the current settings (key, base URL, timeout) at each call. */
  settings(): ProviderSettings;
  /** Extra headers on every request (OpenRouter's HTTP-Referer and X-Title), read at each call. */
  headers?(): Record<string, string>;
  vision: boolean;
  /** Send `max_completion_tokens` (OpenAI's current name) instead of `max_tokens` (what compatible vendors take). */
  maxCompletionTokens?: boolean;
  embeddings?: { defaultModel: string };
  images?: { defaultModel: string };
  speech?: { defaultModel: string; voices: string[] };
  /** Speech to text on `/audio/transcriptions` (OpenAI: `whisper-1`). */
  transcription?: { defaultModel: string };
  /** Retries after the first attempt (default 3). */
  retries?: number;
  /** First backoff in ms without Retry-After (default 500). */
  baseBackoffMs?: number;
}

type OpenAIClient = import('openai').OpenAI;
type WireMessage = import('openai').OpenAI.Chat.Completions.ChatCompletionMessageParam;
type WireTool = import('openai').OpenAI.Chat.Completions.ChatCompletionTool;

/** Chat messages in the chat-completions wire form. */
export function toWireMessages(messages: ChatMessage[]): WireMessage[] {
  return messages.map((m): WireMessage => {
    switch (m.role) {
      case 'system':
        return { role: 'system', content: m.content };
      case 'user':
        if (m.images?.length) {
          return {
            role: 'user',
            content: [
              ...(m.content ? [{ type: 'text' as const, text: m.content }] : []),
              ...m.images.map((img) => ({
                type: 'image_url' as const,
                image_url: { url: `data:${img.mimeType};base64,${img.base64}` },
              })),
            ],
          };
        }
        return { role: 'user', content: m.content };
      case 'assistant':
        return {
          role: 'assistant',
          content: m.content || null,
          ...(m.toolCalls?.length
            ? {
                tool_calls: m.toolCalls.map((tc) => ({
                  id: tc.id,
                  type: 'function' as const,
                  function: { name: tc.name, arguments: tc.raw ?? JSON.stringify(tc.arguments) },
                })),
              }
            : {}),
        };
      case 'tool':
        return { role: 'tool', tool_call_id: m.toolCallId ?? '', content: m.content };
    }
  });
}

/** Parses the tool calls of a chat-completions message; invalid JSON arguments become `{}` with `raw` kept. */
export function fromWireToolCalls(
  calls: Array<{ id?: string; type?: string; function?: { name?: string; arguments?: string } }> | undefined | null,
): ToolCall[] {
  return (calls ?? [])
    .filter((c) => c.function?.name)
    .map((c, i) => ({ id: c.id || `call_${i}`, name: c.function!.name!, ...parseToolArguments(c.function!.arguments) }));
}

function usageOf(u: { prompt_tokens?: number; completion_tokens?: number } | undefined | null): TokenUsage {
  return { inputTokens: u?.prompt_tokens ?? 0, outputTokens: u?.completion_tokens ?? 0 };
}

/** A ProviderCapability over the `openai` client for one OpenAI-compatible vendor. */
export function createOpenAICompatibleProvider(o: OpenAICompatibleOptions): ProviderCapability {
  const id = o.id;
  let cached: { sig: string; client: OpenAIClient } | undefined;

  async function client(s: ProviderSettings): Promise<OpenAIClient> {
    const headers = o.headers?.() ?? {};
    const sig = JSON.stringify([s.apiKey, s.baseUrl, headers]);
    if (cached?.sig === sig) return cached.client;
    const { OpenAI } = await import('openai');
    const c = new OpenAI({
      apiKey: s.apiKey ?? '',
      baseURL: s.baseUrl,
      // One retry policy: callWithRetry's. The SDK's own timeout stays above ours so ours reports it.
      maxRetries: 0,
      timeout: s.timeoutMs + 5_000,
      defaultHeaders: headers,
      // Never pick up OPENAI_* variables or organisation/project headers from the environment.
      organization: null,
      project: null,
      // OPENAI_LOG=debug would print request details; the provider logs through Keel only.
      logLevel: 'warn',
    });
    cached = { sig, client: c };
    return c;
  }

  function ready(): ProviderSettings {
    const s = o.settings();
    if (!s.apiKey) {
      const miss = missingKey(`${id}ApiKey`, `${id.toUpperCase()}_API_KEY`);
      throw new ProviderError(`${id}: ${miss.missing}`, { provider: id, retryable: false });
    }
    return s;
  }

  async function call<T>(
    fn: (c: OpenAIClient, signal: AbortSignal) => Promise<T>,
    req: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<T> {
    const s = ready();
    const c = await client(s);
    return callWithRetry(id, (signal) => fn(c, signal), {
      ...(req.signal ? { signal: req.signal } : {}),
      timeoutMs: req.timeoutMs ?? s.timeoutMs,
      retries: o.retries ?? 3,
      baseMs: o.baseBackoffMs ?? 500,
      secrets: [s.apiKey],
    });
  }

  const cap: ProviderCapability = {
    id,
    vision: o.vision,
    configured() {
      return o.settings().apiKey ? { ok: true } : missingKey(`${id}ApiKey`, `${id.toUpperCase()}_API_KEY`);
    },

    async chat(req: ChatRequest): Promise<ChatResponse> {
      const tools: WireTool[] | undefined = req.tools?.length
        ? req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }))
        : undefined;
      const body = {
        model: req.model,
        messages: toWireMessages(req.messages),
        ...(tools ? { tools } : {}),
        ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
        ...(req.maxTokens !== undefined ? { [o.maxCompletionTokens ? 'max_completion_tokens' : 'max_tokens']: req.maxTokens } : {}),
        stream: false as const,
      };
      const res = await call((c, signal) => c.chat.completions.create(body, { signal }), req);
      const choice = res.choices?.[0];
      const msg = choice?.message;
      return {
        text: typeof msg?.content === 'string' ? msg.content : '',
        toolCalls: fromWireToolCalls(msg?.tool_calls as Parameters<typeof fromWireToolCalls>[0]),
        usage: usageOf(res.usage),
        model: res.model || req.model,
        ...(choice?.finish_reason ? { finishReason: choice.finish_reason } : {}),
      };
    },
  };

  if (o.embeddings) {
    const def = o.embeddings.defaultModel;
    cap.embed = async (req: EmbedRequest) => {
      const model = req.model ?? def;
      if (req.texts.length === 0) return { vectors: [], model };
      const res = await call((c, signal) => c.embeddings.create({ model, input: req.texts, encoding_format: 'float' }, { signal }), req);
      const data = [...res.data].sort((a, b) => a.index - b.index);
      return {
        vectors: data.map((d) => d.embedding as number[]),
        usage: { inputTokens: res.usage?.prompt_tokens ?? 0, outputTokens: 0 },
        model: res.model || model,
      };
    };
  }

  if (o.images) {
    const def = o.images.defaultModel;
    cap.generateImage = async (req: ImageRequest) => {
      if (!req.prompt.trim()) throw badRequest(id, 'generateImage needs a non-empty prompt.');
      const model = req.model ?? def;
      // dall-e models answer with a URL unless asked for b64_json; gpt-image models always answer b64_json and
      // reject response_format.
      const body = {
        model,
        prompt: req.prompt,
        n: 1,
        ...(req.size ? { size: req.size } : {}),
        ...(req.quality ? { quality: req.quality } : {}),
        ...(model.startsWith('dall-e') ? { response_format: 'b64_json' as const } : {}),
      } as import('openai').OpenAI.Images.ImageGenerateParamsNonStreaming;
      const res = await call((c, signal) => c.images.generate(body, { signal }), req);
      const first = res.data?.[0];
      if (!first?.b64_json) throw badRequest(id, `the image model ${model} returned no image data.`);
      const fmt = (res as { output_format?: string }).output_format ?? 'png';
      return { mimeType: `image/${fmt === 'jpg' ? 'jpeg' : fmt}`, base64: first.b64_json };
    };
  }

  if (o.speech) {
    const { defaultModel, voices } = o.speech;
    cap.voices = [...voices];
    cap.speak = async (req: SpeechRequest) => {
      const voice = (req.voice ?? voices[0]!).toLowerCase();
      if (!voices.includes(voice)) {
        throw badRequest(id, `unknown voice "${req.voice}"; choose one of: ${voices.join(', ')}.`);
      }
      if (!req.text.trim()) throw badRequest(id, 'speak needs non-empty text.');
      const format = req.format === 'opus' ? ('opus' as const) : ('mp3' as const);
      const body = { model: req.model ?? defaultModel, voice, input: req.text, response_format: format };
      const buf = await call(async (c, signal) => {
        const res = await c.audio.speech.create(body, { signal });
        return Buffer.from(await res.arrayBuffer());
      }, req);
      // `opus` comes in an Ogg container.
      return { mimeType: format === 'opus' ? 'audio/ogg' : 'audio/mpeg', base64: buf.toString('base64') };
    };
  }

  if (o.transcription) {
    const def = o.transcription.defaultModel;
    cap.transcribe = async (req: TranscriptionRequest) => {
      const audio = await readAudio(id, req);
      const model = req.model ?? def;
      const res = await call(async (c, signal) => {
        const { toFile } = await import('openai');
        // A fresh upload per attempt: a retried request must send the whole body again.
        const file = await toFile(audio.bytes, audio.name, audio.type ? { type: audio.type } : {});
        return c.audio.transcriptions.create(
          { model, file, response_format: 'json', ...(req.language ? { language: req.language } : {}) },
          { signal },
        );
      }, req);
      return { text: typeof res.text === 'string' ? res.text : '', model };
    };
  }

  return cap;
}
