/**
 * providerB (Google Gemini) on the `@google/genai` client: chat with function calling, embeddings, images
 * (Gemini image models through generateContent; Imagen needs Vertex AI, which this adapter does not use), speech (Gemini TTS models
 * through generateContent with a speechConfig; the PCM answer is wrapped as WAV).
 *
 * `@google/genai` is imported only on the first call. Notes on the client, checked in its Node build:
 * - with an API key it sends the key as the `x-goog-api-key` header, never as `?key=` in the URL;
 * - without `httpOptions.retryOptions` it does not retry, so {@link callWithRetry} is the only retry policy;
 * - its Live API (websockets) puts the key in the URL: this adapter never uses it;
 * - its errors carry the status but not the headers, so a custom `fetch` turns every non-2xx answer into an
 *   error with the status and headers (Retry-After) before the client sees it.
 */
import type { Content, GenerateContentResponse, GoogleGenAI, Part } from '@google/genai';
import { ProviderError } from '../providers.js';
import type {
  ChatMessage,
  ChatRequest,
  ChatResponse,
  EmbedRequest,
  ImageRequest,
  ProviderCapability,
  SpeechRequest,
  TranscriptionRequest,
  ToolCall,
} from '../providers.js';
import { badRequest, callWithRetry, missingKey, parseToolArguments, readAudio, type ProviderSettings } from './common.js';

/** Prebuilt voices of the Gemini TTS models (lower-case; sent capitalised). */
export const GEMINI_VOICES = [
  'achernar',
  'achird',
  'algenib',
  'algieba',
  'alnilam',
  'aoede',
  'autonoe',
  'callirrhoe',
  'charon',
  'despina',
  'enceladus',
  'erinome',
  'fenrir',
  'gacrux',
  'iapetus',
  'kore',
  'laomedeia',
  'leda',
  'orus',
  'puck',
  'pulcherrima',
  'rasalgethi',
  'sadachbia',
  'sadaltager',
  'schedar',
  'sulafat',
  'umbriel',
  'vindemiatrix',
  'zephyr',
  'zubenelgenubi',
];

/** API version put in every path. */
export const GEMINI_API_VERSION = 'v1beta';

export const GEMINI_DEFAULTS = {
  baseUrl: 'https://generativelanguage.googleapis.com',
  embedModel: 'gemini-embedding-001',
  imageModel: 'gemini-2.5-flash-image',
  speechModel: 'gemini-2.5-flash-preview-tts',
  voice: 'kore',
  /** Gemini has no speech-to-text endpoint: a multimodal model hears the audio and writes it down. */
  transcriptionModel: 'gemini-2.5-flash',
};

export interface GeminiOptions {
  id: string;
  settings(): ProviderSettings;
  retries?: number;
  baseBackoffMs?: number;
}

/** fetch that turns a non-2xx answer into an error carrying status and headers (for Retry-After). */
async function strictFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const res = await fetch(input, init);
  if (res.ok) return res;
  let message = `HTTP ${res.status}`;
  try {
    const text = await res.text();
    try {
      const body = JSON.parse(text) as { error?: { message?: string } };
      message = body.error?.message ?? text;
    } catch {
      message = text || message;
    }
  } catch {
    /* body unreadable */
  }
  throw Object.assign(new Error(message), { status: res.status, headers: res.headers });
}

const cap1 = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/** A WAV file around 16-bit little-endian mono PCM. */
export function pcmToWav(pcm: Buffer, rate: number, channels = 1): Buffer {
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + pcm.length, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * channels * 2, 28);
  h.writeUInt16LE(channels * 2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(pcm.length, 40);
  return Buffer.concat([h, pcm]);
}

export function createGeminiProvider(o: GeminiOptions): ProviderCapability {
  const id = o.id;
  let cached: { sig: string; client: GoogleGenAI } | undefined;
  /**
   * Gemini's thinking models attach a `thoughtSignature` to function calls and want it back with the call in the
   * next turn. ToolCall has no field for it, so it is remembered here by tool-call id (bounded).
   */
  const signatures = new Map<string, string>();
  let seq = 0;

  async function client(s: ProviderSettings): Promise<GoogleGenAI> {
    const sig = JSON.stringify([s.apiKey, s.baseUrl]);
    if (cached?.sig === sig) return cached.client;
    const { GoogleGenAI } = await import('@google/genai');
    const c = new GoogleGenAI({
      vertexai: false,
      apiKey: s.apiKey ?? '',
      // v1beta: the version Google's REST reference documents for function calling with JSON schema, TTS and
      // image output (the client's own default became v1).
      httpOptions: { baseUrl: s.baseUrl, apiVersion: GEMINI_API_VERSION, fetch: strictFetch },
    });
    cached = { sig, client: c };
    return c;
  }

  function ready(): ProviderSettings {
    const s = o.settings();
    if (!s.apiKey) {
      throw new ProviderError(`${id}: ${missingKey(`${id}ApiKey`, `${id.toUpperCase()}_API_KEY`).missing}`, {
        provider: id,
        retryable: false,
      });
    }
    return s;
  }

  async function call<T>(
    fn: (c: GoogleGenAI, signal: AbortSignal) => Promise<T>,
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

  function toContents(messages: ChatMessage[]): { contents: Content[]; system?: string } {
    const system = messages
      .filter((m) => m.role === 'system')
      .map((m) => m.content)
      .join('\n\n');
    const names = new Map<string, string>();
    const contents: Content[] = [];
    const push = (role: 'user' | 'model', parts: Part[]) => {
      if (!parts.length) return;
      const last = contents[contents.length - 1];
      if (last && last.role === role) last.parts!.push(...parts);
      else contents.push({ role, parts });
    };
    for (const m of messages) {
      if (m.role === 'user') {
        push('user', [
          ...(m.content ? [{ text: m.content }] : []),
          ...(m.images ?? []).map((img) => ({ inlineData: { mimeType: img.mimeType, data: img.base64 } })),
        ]);
      } else if (m.role === 'assistant') {
        const parts: Part[] = m.content ? [{ text: m.content }] : [];
        for (const tc of m.toolCalls ?? []) {
          names.set(tc.id, tc.name);
          const thoughtSignature = signatures.get(tc.id);
          parts.push({ functionCall: { name: tc.name, args: tc.arguments }, ...(thoughtSignature ? { thoughtSignature } : {}) });
        }
        push('model', parts);
      } else if (m.role === 'tool') {
        const name = m.name ?? (m.toolCallId ? names.get(m.toolCallId) : undefined) ?? 'tool';
        push('user', [{ functionResponse: { name, response: { result: m.content } } }]);
      }
    }
    return { contents, ...(system ? { system } : {}) };
  }

  function parse(res: GenerateContentResponse, model: string): ChatResponse {
    const cand = res.candidates?.[0];
    const parts = cand?.content?.parts ?? [];
    const text = parts
      .filter((p) => typeof p.text === 'string' && !p.thought)
      .map((p) => p.text)
      .join('');
    const toolCalls: ToolCall[] = [];
    for (const p of parts) {
      if (!p.functionCall?.name) continue;
      const tcId = p.functionCall.id || `gemini_call_${++seq}`;
      if (p.thoughtSignature) {
        signatures.set(tcId, p.thoughtSignature);
        if (signatures.size > 1000) signatures.delete(signatures.keys().next().value!);
      }
      toolCalls.push({ id: tcId, name: p.functionCall.name, ...parseToolArguments(p.functionCall.args ?? {}) });
    }
    const u = res.usageMetadata;
    return {
      text,
      toolCalls,
      usage: { inputTokens: u?.promptTokenCount ?? 0, outputTokens: (u?.candidatesTokenCount ?? 0) + (u?.thoughtsTokenCount ?? 0) },
      model: res.modelVersion || model,
      ...(cand?.finishReason ? { finishReason: String(cand.finishReason) } : {}),
    };
  }

  /** The first inlineData part of a generateContent answer. */
  function inline(res: GenerateContentResponse): { mimeType: string; data: string } | undefined {
    for (const p of res.candidates?.[0]?.content?.parts ?? []) {
      if (p.inlineData?.data) return { mimeType: p.inlineData.mimeType ?? 'application/octet-stream', data: p.inlineData.data };
    }
    return undefined;
  }

  return {
    id,
    vision: true,
    voices: [...GEMINI_VOICES],
    configured() {
      return o.settings().apiKey ? { ok: true } : missingKey(`${id}ApiKey`, `${id.toUpperCase()}_API_KEY`);
    },

    async chat(req: ChatRequest): Promise<ChatResponse> {
      const { contents, system } = toContents(req.messages);
      const res = await call(
        (c, signal) =>
          c.models.generateContent({
            model: req.model,
            contents,
            config: {
              abortSignal: signal,
              ...(system ? { systemInstruction: system } : {}),
              ...(req.tools?.length
                ? {
                    tools: [
                      {
                        functionDeclarations: req.tools.map((t) => ({
                          name: t.name,
                          description: t.description,
                          parametersJsonSchema: t.parameters,
                        })),
                      },
                    ],
                  }
                : {}),
              ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
              ...(req.maxTokens !== undefined ? { maxOutputTokens: req.maxTokens } : {}),
            },
          }),
        req,
      );
      return parse(res, req.model);
    },

    async embed(req: EmbedRequest) {
      const model = req.model ?? GEMINI_DEFAULTS.embedModel;
      if (req.texts.length === 0) return { vectors: [], model };
      const res = await call((c, signal) => c.models.embedContent({ model, contents: req.texts, config: { abortSignal: signal } }), req);
      const vectors = (res.embeddings ?? []).map((e) => e.values ?? []);
      if (vectors.length !== req.texts.length) {
        throw new ProviderError(`${id}: asked for ${req.texts.length} embeddings, got ${vectors.length}`, {
          provider: id,
          retryable: false,
        });
      }
      return { vectors, model };
    },

    async generateImage(req: ImageRequest) {
      if (!req.prompt.trim()) throw badRequest(id, 'generateImage needs a non-empty prompt.');
      const model = req.model ?? GEMINI_DEFAULTS.imageModel;
      if (model.startsWith('imagen')) {
        // @google/genai 3 offers generateImages (Imagen) only on Vertex AI, not with a Gemini API key.
        throw badRequest(id, `Imagen models (${model}) need Vertex AI; use a Gemini image model such as ${GEMINI_DEFAULTS.imageModel}.`);
      }
      const res = await call(
        (c, signal) =>
          c.models.generateContent({
            model,
            contents: [{ role: 'user', parts: [{ text: req.prompt }] }],
            config: { abortSignal: signal, responseModalities: ['IMAGE', 'TEXT'] },
          }),
        req,
      );
      const img = inline(res);
      if (!img) throw badRequest(id, `the image model ${model} returned no image data.`);
      return { mimeType: img.mimeType, base64: img.data };
    },

    async speak(req: SpeechRequest) {
      const voice = (req.voice ?? GEMINI_DEFAULTS.voice).toLowerCase();
      if (!GEMINI_VOICES.includes(voice)) {
        throw badRequest(id, `unknown voice "${req.voice}"; choose one of: ${GEMINI_VOICES.join(', ')}.`);
      }
      if (!req.text.trim()) throw badRequest(id, 'speak needs non-empty text.');
      const model = req.model ?? GEMINI_DEFAULTS.speechModel;
      const res = await call(
        (c, signal) =>
          c.models.generateContent({
            model,
            contents: [{ role: 'user', parts: [{ text: req.text }] }],
            config: {
              abortSignal: signal,
              responseModalities: ['AUDIO'],
              speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: cap1(voice) } } },
            },
          }),
        req,
      );
      const audio = inline(res);
      if (!audio) throw badRequest(id, `the speech model ${model} returned no audio.`);
      // Gemini TTS answers raw 16-bit PCM (`audio/L16;codec=pcm;rate=24000`): wrap it so players can use it.
      const pcm = /^audio\/(l16|pcm)/i.exec(audio.mimeType);
      if (pcm) {
        const rate = Number(/rate=(\d+)/i.exec(audio.mimeType)?.[1] ?? 24000);
        return { mimeType: 'audio/wav', base64: pcmToWav(Buffer.from(audio.data, 'base64'), rate).toString('base64') };
      }
      return { mimeType: audio.mimeType, base64: audio.data };
    },

    async transcribe(req: TranscriptionRequest) {
      const audio = await readAudio(id, req);
      const model = req.model ?? GEMINI_DEFAULTS.transcriptionModel;
      const ask = `Transcribe this audio verbatim${req.language ? ` (language: ${req.language})` : ''}. Answer with the transcript only.`;
      const res = await call(
        (c, signal) =>
          c.models.generateContent({
            model,
            contents: [
              {
                role: 'user',
                parts: [
                  { text: ask },
                  { inlineData: { mimeType: audio.type ?? 'audio/ogg', data: Buffer.from(audio.bytes).toString('base64') } },
                ],
              },
            ],
            config: { abortSignal: signal, temperature: 0 },
          }),
        req,
      );
      return { text: parse(res, model).text.trim(), model };
    },
  };
}
