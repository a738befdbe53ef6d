/**
 * providerB (Gemini) through the real kernel and the real `@google/genai` client against a loopback fake.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError, type ProviderCapability } from '../../../sdk/index.js';
import { FAKE_PCM, GEMINI_PNG, geminiError, geminiReply, startGeminiFake, type ScriptedServer } from '../../fakes/gemini-server.js';
import { startProviders, type ProviderKernel } from './openai-kernel.js';

const KEY = 'AIzaSyFAKE-gemini-key-0123456789';

async function rejection(p: Promise<unknown>): Promise<ProviderError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ProviderError);
    return e as ProviderError;
  }
  throw new Error('expected a rejection');
}

describe('providerB (Gemini) through the kernel', () => {
  let fake: ScriptedServer;
  let k: ProviderKernel;
  let b: ProviderCapability;

  beforeAll(async () => {
    fake = await startGeminiFake();
    k = await startProviders(['providerB'], { providerBApiKey: KEY, providerBBaseUrl: fake.url });
    b = k.provider('providerB');
  });
  afterAll(async () => {
    await k?.stop();
    await fake?.close();
  });
  afterEach(() => {
    // No request of any test carried the key in its URL, and every one carried it as x-goog-api-key.
    for (const r of fake.requests) {
      expect(r.url).not.toContain(KEY);
      expect(r.url).not.toMatch(/[?&]key=/);
      expect(r.headers['x-goog-api-key']).toBe(KEY);
    }
    fake.requests.length = 0;
  });

  it('is configured, offers vision and voices including achernar, alnilam and kore', () => {
    expect(b.configured()).toEqual({ ok: true });
    expect(b.vision).toBe(true);
    expect(b.voices).toEqual(expect.arrayContaining(['achernar', 'alnilam', 'kore']));
  });

  it('chats: system instruction, text, usage (thoughts count as output)', async () => {
    fake.script(geminiReply({ text: 'Bonjour.', usage: { prompt: 30, candidates: 5, thoughts: 7 }, modelVersion: 'gemini-2.5-flash-001' }));
    const res = await b.chat({
      model: 'gemini-2.5-flash',
      messages: [
        { role: 'system', content: 'answer in French' },
        { role: 'user', content: 'hello' },
      ],
      temperature: 0.1,
      maxTokens: 64,
    });
    expect(res).toMatchObject({
      text: 'Bonjour.',
      toolCalls: [],
      usage: { inputTokens: 30, outputTokens: 12 },
      model: 'gemini-2.5-flash-001',
      finishReason: 'STOP',
    });
    const req = fake.requests[0]!;
    expect(req.url).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(req.body.systemInstruction).toMatchObject({ parts: [{ text: 'answer in French' }] });
    expect(req.body.contents).toEqual([{ role: 'user', parts: [{ text: 'hello' }] }]);
    expect(req.body.generationConfig).toMatchObject({ temperature: 0.1, maxOutputTokens: 64 });
    expect(JSON.stringify(req.body)).not.toContain('abortSignal');
  });

  it('declares tools as functionDeclarations and parses functionCall parts', async () => {
    fake.script(
      geminiReply({
        functionCalls: [
          { name: 'get_weather', args: { city: 'Oslo' }, thoughtSignature: 'sig-1' },
          { name: 'get_time', args: {} },
        ],
      }),
    );
    const params = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const res = await b.chat({
      model: 'gemini-2.5-pro',
      messages: [{ role: 'user', content: 'weather in Oslo?', images: [{ mimeType: 'image/png', base64: 'AAAA' }] }],
      tools: [
        { name: 'get_weather', description: 'Weather for a city', parameters: params },
        { name: 'get_time', description: 'Time now', parameters: { type: 'object', properties: {} } },
      ],
    });
    expect(res.text).toBe('');
    expect(res.toolCalls.map((t) => [t.name, t.arguments])).toEqual([
      ['get_weather', { city: 'Oslo' }],
      ['get_time', {}],
    ]);
    expect(new Set(res.toolCalls.map((t) => t.id)).size).toBe(2);
    const req = fake.requests[0]!;
    expect(req.body.tools).toEqual([
      {
        functionDeclarations: [
          { name: 'get_weather', description: 'Weather for a city', parametersJsonSchema: params },
          { name: 'get_time', description: 'Time now', parametersJsonSchema: { type: 'object', properties: {} } },
        ],
      },
    ]);
    expect(req.body.contents[0].parts).toEqual([{ text: 'weather in Oslo?' }, { inlineData: { mimeType: 'image/png', data: 'AAAA' } }]);

    // The next turn sends the calls back (with the thought signature) and the results as functionResponse parts.
    fake.script(geminiReply({ text: 'Sunny, 12:00.' }));
    const next = await b.chat({
      model: 'gemini-2.5-pro',
      messages: [
        { role: 'user', content: 'weather in Oslo?' },
        { role: 'assistant', content: '', toolCalls: res.toolCalls },
        { role: 'tool', content: 'sunny', toolCallId: res.toolCalls[0]!.id },
        { role: 'tool', content: '12:00', toolCallId: res.toolCalls[1]!.id, name: 'get_time' },
      ],
    });
    expect(next.text).toBe('Sunny, 12:00.');
    expect(fake.requests[1]!.body.contents).toEqual([
      { role: 'user', parts: [{ text: 'weather in Oslo?' }] },
      {
        role: 'model',
        parts: [
          { functionCall: { name: 'get_weather', args: { city: 'Oslo' } }, thoughtSignature: 'sig-1' },
          { functionCall: { name: 'get_time', args: {} } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'get_weather', response: { result: 'sunny' } } },
          { functionResponse: { name: 'get_time', response: { result: '12:00' } } },
        ],
      },
    ]);
  });

  it('retries 429 with Retry-After and 500, then succeeds; 400 is not retried', async () => {
    fake.script(geminiError(429, 'quota', { 'retry-after': '0' }), geminiError(500), geminiReply({ text: 'finally' }));
    const res = await b.chat({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.text).toBe('finally');
    expect(fake.requests).toHaveLength(3);
    fake.requests.length = 0;
    fake.script(geminiError(400, 'bad request'));
    const e = await rejection(b.chat({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] }));
    expect(e.info).toMatchObject({ provider: 'providerB', status: 400, retryable: false });
    expect(fake.requests).toHaveLength(1);
  });

  it('reports status and Retry-After when retries run out', async () => {
    fake.script(...Array.from({ length: 4 }, () => geminiError(429, 'quota', { 'retry-after': '0' })));
    const e = await rejection(b.chat({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] }));
    expect(e.info).toMatchObject({ status: 429, retryable: true, retryAfterMs: 0 });
    expect(fake.requests).toHaveLength(4);
  });

  it('never puts the key in an error message, even when the vendor echoes it', async () => {
    fake.script(
      geminiError(403, `API key not valid: ${KEY} (request https://x/models/m:generateContent?key=${KEY})`),
      geminiError(400, `API_KEY_INVALID ${KEY}`),
    );
    const errors = [
      await rejection(b.chat({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] })),
      await rejection(b.embed!({ texts: ['x'] })),
    ];
    fake.script({ hang: true });
    errors.push(await rejection(b.chat({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }], timeoutMs: 100 })));
    for (const e of errors) {
      expect(e.message).not.toContain(KEY);
      expect(String(e.stack)).not.toContain(KEY);
      expect(JSON.stringify(e.info)).not.toContain(KEY);
    }
    expect(errors[0]!.message).toMatch(/403.*check the API key/);
    expect(errors[2]!.message).toMatch(/timeout/);
    for (const entry of k.logs.recent({ limit: 1000 })) expect(entry.message).not.toContain(KEY);
  });

  it("retries a reset connection and stops when the caller's signal aborts", async () => {
    fake.script({ reset: true }, geminiReply({ text: 'back' }));
    expect((await b.chat({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] })).text).toBe('back');
    expect(fake.requests).toHaveLength(2);
    fake.requests.length = 0;
    fake.script({ hang: true });
    const ac = new AbortController();
    const p = rejection(b.chat({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }], signal: ac.signal }));
    await new Promise((r) => setTimeout(r, 50));
    ac.abort();
    expect((await p).message).toMatch(/cancelled/);
    expect(fake.requests).toHaveLength(1);
  });

  it('embeds several texts in one batchEmbedContents call with gemini-embedding-001 by default', async () => {
    const res = await b.embed!({ texts: ['one', 'three'] });
    expect(res).toEqual({
      vectors: [
        [3, 0, 0.25],
        [5, 1, 0.25],
      ],
      model: 'gemini-embedding-001',
    });
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]!.url).toBe('/v1beta/models/gemini-embedding-001:batchEmbedContents');
    expect(fake.requests[0]!.body.requests).toHaveLength(2);
  });

  it('generates an image with a Gemini image model (inlineData); Imagen is refused clearly', async () => {
    const img = await b.generateImage!({ prompt: 'a red square' });
    expect(img).toEqual({ mimeType: 'image/png', base64: GEMINI_PNG.toString('base64') });
    expect(fake.requests[0]!.url).toBe('/v1beta/models/gemini-2.5-flash-image:generateContent');
    expect(fake.requests[0]!.body.generationConfig.responseModalities).toEqual(['IMAGE', 'TEXT']);
    const e = await rejection(b.generateImage!({ prompt: 'a blue circle', model: 'imagen-4.0-generate-001' }));
    expect(e.message).toContain('Vertex AI');
    expect(fake.requests).toHaveLength(1);
  });

  it('speaks with a Gemini TTS model and a prebuilt voice, answering WAV; unknown voices are refused', async () => {
    const audio = await b.speak!({ text: 'hello', voice: 'alnilam' });
    expect(audio.mimeType).toBe('audio/wav');
    const wav = Buffer.from(audio.base64, 'base64');
    expect(wav.subarray(0, 4).toString('ascii')).toBe('RIFF');
    expect(wav.readUInt32LE(24)).toBe(24000);
    expect(wav.subarray(44)).toEqual(FAKE_PCM);
    const req = fake.requests[0]!;
    expect(req.url).toBe('/v1beta/models/gemini-2.5-flash-preview-tts:generateContent');
    expect(req.body.generationConfig).toMatchObject({
      responseModalities: ['AUDIO'],
      speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Alnilam' } } },
    });
    await b.speak!({ text: 'hi', voice: 'Achernar' });
    await b.speak!({ text: 'hi' });
    expect(fake.requests.map((r) => r.body.generationConfig.speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName)).toEqual([
      'Alnilam',
      'Achernar',
      'Kore',
    ]);
    const e = await rejection(b.speak!({ text: 'hi', voice: 'alloy' }));
    expect(e.message).toContain('unknown voice "alloy"');
    expect(fake.requests).toHaveLength(3);
  });
});

describe('providerB without a key', () => {
  it('names providerBApiKey and PROVIDERB_API_KEY, and starts fine', async () => {
    const k = await startProviders(['providerB'], {});
    try {
      const b = k.provider('providerB');
      const c = b.configured();
      expect(c.ok).toBe(false);
      expect((c as { missing: string }).missing).toContain('providerBApiKey');
      expect((c as { missing: string }).missing).toContain('PROVIDERB_API_KEY');
      expect(k.kernel.config.get('providerBComputerUseEnabled')).toBe(false);
    } finally {
      await k.stop();
    }
  });
});
