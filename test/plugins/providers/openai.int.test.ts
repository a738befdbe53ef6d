/**
 * providerA (OpenAI) through the real kernel and the real `openai` client against a loopback fake, and every
 * other OpenAI-compatible provider (E, F, H, I, J, K) against the same fake.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError, type ProviderCapability } from '../../../sdk/index.js';
import { chatReply, errorReply, FAKE_MP3, PNG_1x1, startOpenAIFake, type ScriptedServer } from '../../fakes/openai-server.js';
import { startProviders, type ProviderKernel } from './openai-kernel.js';

const KEY = 'sk-test-abcdef0123456789secret';

async function rejection(p: Promise<unknown>): Promise<ProviderError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ProviderError);
    return e as ProviderError;
  }
  throw new Error('expected a rejection');
}

describe('providerA (OpenAI) through the kernel', () => {
  let fake: ScriptedServer;
  let k: ProviderKernel;
  let a: ProviderCapability;

  beforeAll(async () => {
    fake = await startOpenAIFake();
    k = await startProviders(['providerA'], { providerAApiKey: KEY, providerABaseUrl: fake.url });
    a = k.provider('providerA');
  });
  afterAll(async () => {
    await k?.stop();
    await fake?.close();
  });
  afterEach(() => {
    fake.requests.length = 0;
  });

  it('is configured, offers vision and the six voices', () => {
    expect(a.configured()).toEqual({ ok: true });
    expect(a.vision).toBe(true);
    expect(a.voices).toEqual(['alloy', 'echo', 'fable', 'onyx', 'nova', 'shimmer']);
  });

  it('chats: text, usage, model, key only in the Authorization header', async () => {
    fake.script(chatReply({ text: 'Paris.', usage: { prompt: 21, completion: 3 }, model: 'gpt-4o-2024' }));
    const res = await a.chat({
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'capital of France?' },
      ],
      temperature: 0.2,
      maxTokens: 50,
    });
    expect(res).toMatchObject({
      text: 'Paris.',
      toolCalls: [],
      usage: { inputTokens: 21, outputTokens: 3 },
      model: 'gpt-4o-2024',
      finishReason: 'stop',
    });
    expect(fake.requests).toHaveLength(1);
    const req = fake.requests[0]!;
    expect(req.url).toBe('/v1/chat/completions');
    expect(req.url).not.toContain(KEY);
    expect(req.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(req.body).toMatchObject({
      model: 'gpt-4o',
      temperature: 0.2,
      max_completion_tokens: 50,
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'capital of France?' },
      ],
    });
    expect(req.body.tools).toBeUndefined();
  });

  it('sends tools natively and parses tool calls; invalid JSON arguments become {} with raw kept', async () => {
    fake.script(
      chatReply({
        toolCalls: [
          { id: 'call_a', name: 'get_weather', arguments: '{"city":"Oslo"}' },
          { id: 'call_b', name: 'get_time', arguments: '{"zone": Europe/Oslo' },
        ],
      }),
    );
    const tools = [
      {
        name: 'get_weather',
        description: 'Weather for a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
      { name: 'get_time', description: 'Time in a zone', parameters: { type: 'object', properties: { zone: { type: 'string' } } } },
    ];
    const res = await a.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'weather and time in Oslo' }], tools });
    expect(res.text).toBe('');
    expect(res.finishReason).toBe('tool_calls');
    expect(res.toolCalls).toEqual([
      { id: 'call_a', name: 'get_weather', arguments: { city: 'Oslo' } },
      { id: 'call_b', name: 'get_time', arguments: {}, raw: '{"zone": Europe/Oslo' },
    ]);
    expect(fake.requests[0]!.body.tools).toEqual(tools.map((t) => ({ type: 'function', function: t })));
  });

  it('sends the tool-call history and tool results back in the wire form, with images as data URLs', async () => {
    await a.chat({
      model: 'gpt-4o',
      messages: [
        { role: 'user', content: 'what is this?', images: [{ mimeType: 'image/png', base64: 'AAAA' }] },
        { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'look', arguments: { x: 1 } }] },
        { role: 'tool', content: 'a cat', toolCallId: 'c1', name: 'look' },
      ],
    });
    expect(fake.requests[0]!.body.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what is this?' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
        ],
      },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'look', arguments: '{"x":1}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'a cat' },
    ]);
  });

  it('retries a 429, waiting as Retry-After says, then succeeds', async () => {
    fake.script(errorReply(429, 'slow down', { 'retry-after': '0' }), chatReply({ text: 'after the wait' }));
    const res = await a.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.text).toBe('after the wait');
    expect(fake.requests).toHaveLength(2);
  });

  it('reports the Retry-After of a 429 that outlasts the retries', async () => {
    fake.script(...Array.from({ length: 4 }, () => errorReply(429, 'slow down', { 'retry-after': '0' })));
    const e = await rejection(a.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }));
    expect(fake.requests).toHaveLength(4); // first attempt + 3 retries
    expect(e.info).toMatchObject({ provider: 'providerA', status: 429, retryable: true, retryAfterMs: 0 });
    expect(e.message).toContain('429');
  });

  it('retries 500 twice then succeeds', async () => {
    fake.script(errorReply(500), errorReply(502), chatReply({ text: 'third time' }));
    const res = await a.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.text).toBe('third time');
    expect(fake.requests).toHaveLength(3);
  });

  it('retries a reset connection', async () => {
    fake.script({ reset: true }, chatReply({ text: 'reconnected' }));
    const res = await a.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.text).toBe('reconnected');
    expect(fake.requests).toHaveLength(2);
  });

  it('does not retry a 400, and the error holds no key', async () => {
    fake.script(errorReply(400, `bad model; your key ${KEY} was fine`));
    const e = await rejection(a.chat({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] }));
    expect(fake.requests).toHaveLength(1);
    expect(e.info).toMatchObject({ provider: 'providerA', status: 400, retryable: false });
    expect(e.message).toContain('bad model');
    expect(e.message).not.toContain(KEY);
    expect(JSON.stringify(e.info)).not.toContain(KEY);
  });

  it('a 401 says to check the key, without the key', async () => {
    fake.script(errorReply(401, `Incorrect API key provided: ${KEY}`));
    const e = await rejection(a.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }));
    expect(e.message).toMatch(/401.*check the API key/);
    expect(e.message).not.toContain(KEY);
    expect(e.message).not.toContain(KEY.slice(3, 20));
  });

  it('times out a request that never answers, without retrying it', async () => {
    fake.script({ hang: true });
    const e = await rejection(a.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], timeoutMs: 150 }));
    expect(e.message).toMatch(/timeout/);
    expect(e.info.retryable).toBe(false);
    expect(fake.requests).toHaveLength(1);
  });

  it("stops when the caller's signal aborts", async () => {
    fake.script({ hang: true });
    const ac = new AbortController();
    const p = rejection(a.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }], signal: ac.signal }));
    await new Promise((r) => setTimeout(r, 50));
    ac.abort();
    const e = await p;
    expect(e.message).toMatch(/cancelled/);
    expect(fake.requests).toHaveLength(1);
  });

  it('embeds with text-embedding-3-small by default, vectors in input order', async () => {
    fake.script({
      json: {
        object: 'list',
        model: 'text-embedding-3-small',
        data: [
          { object: 'embedding', index: 1, embedding: [0, 1] },
          { object: 'embedding', index: 0, embedding: [1, 0] },
        ],
        usage: { prompt_tokens: 4, total_tokens: 4 },
      },
    });
    const res = await a.embed!({ texts: ['first', 'second'] });
    expect(res).toEqual({
      vectors: [
        [1, 0],
        [0, 1],
      ],
      usage: { inputTokens: 4, outputTokens: 0 },
      model: 'text-embedding-3-small',
    });
    expect(fake.requests[0]!.url).toBe('/v1/embeddings');
    expect(fake.requests[0]!.body).toMatchObject({ model: 'text-embedding-3-small', input: ['first', 'second'], encoding_format: 'float' });
  });

  it('generates an image as base64 (gpt-image-1 by default; dall-e asks for b64_json)', async () => {
    const img = await a.generateImage!({ prompt: 'a red square', size: '1024x1024' });
    expect(img).toEqual({ mimeType: 'image/png', base64: PNG_1x1.toString('base64') });
    expect(fake.requests[0]!.url).toBe('/v1/images/generations');
    expect(fake.requests[0]!.body).toMatchObject({ model: 'gpt-image-1', prompt: 'a red square', size: '1024x1024', n: 1 });
    expect(fake.requests[0]!.body.response_format).toBeUndefined();
    await a.generateImage!({ prompt: 'a blue circle', model: 'dall-e-3' });
    expect(fake.requests[1]!.body).toMatchObject({ model: 'dall-e-3', response_format: 'b64_json' });
  });

  it('speaks with each of the six voices and rejects an unknown voice clearly', async () => {
    for (const voice of a.voices!) {
      const audio = await a.speak!({ text: 'hello', voice });
      expect(audio).toEqual({ mimeType: 'audio/mpeg', base64: FAKE_MP3.toString('base64') });
    }
    expect(fake.requests.map((r) => r.body.voice)).toEqual(a.voices);
    expect(fake.requests[0]!.url).toBe('/v1/audio/speech');
    expect(fake.requests[0]!.body).toMatchObject({ model: 'tts-1', input: 'hello', response_format: 'mp3' });
    fake.requests.length = 0;
    const e = await rejection(a.speak!({ text: 'hello', voice: 'kore' }));
    expect(e.message).toContain('unknown voice "kore"');
    expect(e.message).toContain('alloy, echo, fable, onyx, nova, shimmer');
    expect(fake.requests).toHaveLength(0);
  });

  it('logs nothing that holds the key', () => {
    for (const entry of k.logs.recent({ limit: 1000 })) expect(JSON.stringify(entry)).not.toContain(KEY);
  });
});

describe('configured() without keys', () => {
  it('names the missing key and its environment variable, and a call fails without contacting anyone', async () => {
    const ids = ['providerA', 'providerE', 'providerF', 'providerH', 'providerI', 'providerJ', 'providerK'];
    const k = await startProviders(ids, {});
    try {
      for (const id of ids) {
        const p = k.provider(id);
        const c = p.configured();
        expect(c.ok, id).toBe(false);
        expect((c as { missing: string }).missing).toContain(`${id}ApiKey`);
        expect((c as { missing: string }).missing).toContain(`${id.toUpperCase()}_API_KEY`);
        const e = await rejection(p.chat({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }));
        expect(e.message).toContain(`${id}ApiKey`);
      }
    } finally {
      await k.stop();
    }
  });

  it('reads the key from the environment variable', async () => {
    const fake = await startOpenAIFake();
    const k = await startProviders(['providerA'], { providerABaseUrl: fake.url }, { PROVIDERA_API_KEY: KEY });
    try {
      const a = k.provider('providerA');
      expect(a.configured()).toEqual({ ok: true });
      await a.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
      expect(fake.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    } finally {
      await k.stop();
      await fake.close();
    }
  });
});

describe('settings are read at each call', () => {
  it('a changed key applies to the next call without a restart; the agent may not move the base URL', async () => {
    const fake = await startOpenAIFake();
    const k = await startProviders(['providerA'], {}, { PROVIDERA_BASE_URL: fake.url });
    try {
      const a = k.provider('providerA');
      expect(a.configured().ok).toBe(false);
      await k.kernel.config.set('providerAApiKey', KEY, { kind: 'operator' });
      expect(a.configured()).toEqual({ ok: true });
      await a.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
      const other = 'sk-test-the-second-key-000';
      await k.kernel.config.set('providerAApiKey', other, { kind: 'operator' });
      await a.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
      expect(fake.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${KEY}`, `Bearer ${other}`]);
      // LOCKED: an agent's change is refused (an error, never applied nor queued for approval).
      const outcome = await k.kernel.config.set('providerABaseUrl', 'https://attacker.example/v1', { kind: 'agent' }).then(
        (o) => o,
        (e: Error) => e,
      );
      expect(outcome).toBeInstanceOf(Error);
      expect(k.kernel.config.get('providerABaseUrl')).toBe(fake.url);
      // APPROVAL: an agent's change of the key waits for a human.
      const pending = await k.kernel.config.set('providerAApiKey', 'sk-agent-chosen-key-123', { kind: 'agent' });
      expect(pending.status).toBe('pending');
    } finally {
      await k.stop();
      await fake.close();
    }
  });
});

describe('every OpenAI-compatible provider against the fake', () => {
  const table = [
    { id: 'providerA', key: 'sk-a-1234567890' },
    { id: 'providerE', key: 'sk-or-v1-1234567890' },
    { id: 'providerF', key: 'nvapi-1234567890' },
    { id: 'providerH', key: 'mistral-1234567890' },
    { id: 'providerI', key: 'gsk_1234567890' },
    { id: 'providerJ', key: 'xai-1234567890' },
    { id: 'providerK', key: 'csk-1234567890' },
  ];
  let k: ProviderKernel;
  const fakes = new Map<string, ScriptedServer>();

  beforeAll(async () => {
    const overrides: Record<string, unknown> = {};
    for (const t of table) {
      const f = await startOpenAIFake();
      fakes.set(t.id, f);
      overrides[`${t.id}ApiKey`] = t.key;
      overrides[`${t.id}BaseUrl`] = f.url;
    }
    k = await startProviders(
      table.map((t) => t.id),
      { ...overrides, providerEReferer: 'https://keel.example', providerEAppName: 'Keel' },
    );
  });
  afterAll(async () => {
    await k?.stop();
    for (const f of fakes.values()) await f.close();
  });

  for (const t of table) {
    it(`${t.id} chats with tools through its own base URL and key`, async () => {
      const fake = fakes.get(t.id)!;
      fake.script(chatReply({ toolCalls: [{ name: 'echo', arguments: '{"text":"hi"}' }], usage: { prompt: 5, completion: 2 } }));
      const p = k.provider(t.id);
      expect(p.configured()).toEqual({ ok: true });
      const res = await p.chat({
        model: 'vendor/model',
        messages: [{ role: 'user', content: 'say hi' }],
        tools: [{ name: 'echo', description: 'echo text', parameters: { type: 'object', properties: { text: { type: 'string' } } } }],
        maxTokens: 10,
      });
      expect(res.toolCalls).toEqual([{ id: 'call_1', name: 'echo', arguments: { text: 'hi' } }]);
      expect(res.usage).toEqual({ inputTokens: 5, outputTokens: 2 });
      expect(fake.requests).toHaveLength(1);
      const req = fake.requests[0]!;
      expect(req.headers.authorization).toBe(`Bearer ${t.key}`);
      expect(req.url).toBe('/v1/chat/completions');
      // OpenAI takes max_completion_tokens; the compatible vendors take max_tokens.
      expect(req.body[t.id === 'providerA' ? 'max_completion_tokens' : 'max_tokens']).toBe(10);
      if (t.id === 'providerE') {
        expect(req.headers['http-referer']).toBe('https://keel.example');
        expect(req.headers['x-title']).toBe('Keel');
      } else {
        expect(req.headers['http-referer']).toBeUndefined();
        expect(req.headers['x-title']).toBeUndefined();
      }
      for (const other of fakes.values()) if (other !== fake) expect(other.requests).toHaveLength(0);
      fake.requests.length = 0;
    });
  }
});
