/**
 * A loopback server (127.0.0.1, port 0) speaking the Gemini REST API that `@google/genai` uses with an API key:
 * POST /v1beta/models/{model}:generateContent (text, functionCall parts, inlineData images and audio),
 * :embedContent and :batchEmbedContents. Scripted per test; requests recorded.
 */
import { startScriptedServer, type FakeReply, type RecordedRequest, type ScriptedServer } from './openai-server.js';

export type { FakeReply, RecordedRequest, ScriptedServer };

/** A generateContent answer made of the given parts. */
export function geminiReply(o: {
  parts?: Array<Record<string, unknown>>;
  text?: string;
  functionCalls?: Array<{ name: string; args: Record<string, unknown>; id?: string; thoughtSignature?: string }>;
  usage?: { prompt: number; candidates: number; thoughts?: number };
  finishReason?: string;
  modelVersion?: string;
}): FakeReply {
  const parts = o.parts ?? [
    ...(o.text !== undefined ? [{ text: o.text }] : []),
    ...(o.functionCalls ?? []).map((f) => ({
      functionCall: { name: f.name, args: f.args, ...(f.id ? { id: f.id } : {}) },
      ...(f.thoughtSignature ? { thoughtSignature: f.thoughtSignature } : {}),
    })),
  ];
  const u = o.usage ?? { prompt: 9, candidates: 4 };
  return {
    json: {
      candidates: [{ content: { role: 'model', parts }, finishReason: o.finishReason ?? 'STOP', index: 0 }],
      usageMetadata: {
        promptTokenCount: u.prompt,
        candidatesTokenCount: u.candidates,
        ...(u.thoughts ? { thoughtsTokenCount: u.thoughts } : {}),
        totalTokenCount: u.prompt + u.candidates + (u.thoughts ?? 0),
      },
      modelVersion: o.modelVersion ?? 'gemini-fake-001',
    },
  };
}

/** An error body as Google APIs send it. */
export function geminiError(status: number, message = `fake error ${status}`, headers: Record<string, string> = {}): FakeReply {
  const names: Record<number, string> = {
    400: 'INVALID_ARGUMENT',
    403: 'PERMISSION_DENIED',
    429: 'RESOURCE_EXHAUSTED',
    500: 'INTERNAL',
    503: 'UNAVAILABLE',
  };
  return { status, headers, json: { error: { code: status, message, status: names[status] ?? 'UNKNOWN' } } };
}

/** 16-bit PCM standing for speech. */
export const FAKE_PCM = Buffer.from([0, 0, 1, 0, 2, 0, 3, 0]);
/** Bytes of a 1x1 PNG. */
export const GEMINI_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

function texts(content: any): string {
  return (content?.parts ?? []).map((p: { text?: string }) => p.text ?? '').join('');
}

function geminiDefaults(req: RecordedRequest): FakeReply {
  const path = req.url.split('?')[0]!;
  const m = /\/models\/([^:/]+):(\w+)$/.exec(path);
  if (!m) return geminiError(404, `no route ${req.method} ${path}`);
  const [, model, method] = m;
  if (method === 'generateContent') {
    const modalities: string[] = req.body?.generationConfig?.responseModalities ?? [];
    if (modalities.includes('AUDIO')) {
      return geminiReply({ parts: [{ inlineData: { mimeType: 'audio/L16;codec=pcm;rate=24000', data: FAKE_PCM.toString('base64') } }] });
    }
    if (modalities.includes('IMAGE')) {
      return geminiReply({
        parts: [{ text: 'here it is' }, { inlineData: { mimeType: 'image/png', data: GEMINI_PNG.toString('base64') } }],
      });
    }
    return geminiReply({ text: 'hello from the gemini fake', ...(model !== undefined ? { modelVersion: model } : {}) });
  }
  if (method === 'batchEmbedContents') {
    const requests: Array<{ content: unknown }> = req.body?.requests ?? [];
    return { json: { embeddings: requests.map((r, i) => ({ values: [texts(r.content).length, i, 0.25] })) } };
  }
  if (method === 'embedContent') return { json: { embedding: { values: [texts(req.body?.content).length, 0, 0.25] } } };
  return geminiError(404, `no method ${method}`);
}

/** Starts the Gemini fake; its `url` (no version path: the client adds /v1beta) goes in providerBBaseUrl. */
export function startGeminiFake(): Promise<ScriptedServer> {
  return startScriptedServer('', geminiDefaults);
}
