/**
 * providerG (Ollama) through the real kernel and the real `ollama` client, against a loopback server that speaks
 * /api/chat (non-streaming, native tools) and /api/embed.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ProviderError, type ChatRequest, type ProviderCapability } from '../../../sdk/index.js';
import { ollamaChatReply, ollamaEmbedReply, ollamaError, startOllamaServer, type ScriptedServer } from '../../fakes/ollama-server.js';
import { bootKernel } from '../../../testing/index.js';

const MODEL = 'llama3.1:8b';

async function boot(o: { env?: Record<string, string>; overrides?: Record<string, unknown> }) {
  const t = await bootKernel({ builtins: ['providerG'], userPlugins: false, env: o.env ?? {}, config: o.overrides ?? {} });
  return { kernel: t.kernel, provider: t.kernel.registry.use<ProviderCapability>('provider:providerG')!, close: t.close };
}

async function rejection(p: Promise<unknown>): Promise<ProviderError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ProviderError);
    return e as ProviderError;
  }
  throw new Error('expected a rejection');
}

const TOOLS: ChatRequest['tools'] = [
  {
    name: 'add',
    description: 'Adds two numbers',
    parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  },
];
const hi: ChatRequest = { model: MODEL, messages: [{ role: 'user', content: 'hi' }] };

describe('providerG (Ollama)', () => {
  let server: ScriptedServer;
  let k: Awaited<ReturnType<typeof boot>>;
  let provider: ProviderCapability;

  beforeEach(async () => {
    server = await startOllamaServer();
    k = await boot({ overrides: { providerGEnabled: true, providerGApiUrl: server.url } });
    provider = k.provider;
  });
  afterEach(async () => {
    await k.close();
    await server.close();
  });

  it('is loaded and configured when enabled, with vision and embeddings', () => {
    expect(k.kernel.host.status('providerG')?.state).toBe('loaded');
    expect(provider.configured()).toEqual({ ok: true });
    expect(provider.vision).toBe(true);
    expect(provider.embed).toBeTypeOf('function');
  });

  it('chats through /api/chat without streaming; text and usage mapped; no key sent', async () => {
    server.script(ollamaChatReply({ text: 'Hi!', promptEvalCount: 26, evalCount: 3 }));
    const res = await provider.chat({
      model: MODEL,
      messages: [
        { role: 'system', content: 'Be nice.' },
        { role: 'user', content: 'hello' },
      ],
      temperature: 0,
      maxTokens: 64,
    });
    expect(res).toMatchObject({
      text: 'Hi!',
      toolCalls: [],
      usage: { inputTokens: 26, outputTokens: 3 },
      model: 'llama3:8b',
      finishReason: 'stop',
    });
    const r = server.requests[0]!;
    expect(r.method).toBe('POST');
    expect(r.path).toBe('/api/chat');
    expect(r.headers.authorization).toBeUndefined();
    expect(r.body).toEqual({
      model: MODEL,
      stream: false,
      messages: [
        { role: 'system', content: 'Be nice.' },
        { role: 'user', content: 'hello' },
      ],
      options: { temperature: 0, num_predict: 64 },
    });
  });

  it('offers tools natively and returns tool_calls (arguments as an object) as tool calls', async () => {
    server.script(ollamaChatReply({ toolCalls: [{ name: 'add', arguments: { a: 2, b: 3 } }] }));
    const res = await provider.chat({ model: MODEL, messages: [{ role: 'user', content: '2+3?' }], tools: TOOLS });
    expect(res.toolCalls).toEqual([{ id: 'call_0', name: 'add', arguments: { a: 2, b: 3 } }]);
    expect(server.requests[0]!.body.tools).toEqual([
      { type: 'function', function: { name: 'add', description: 'Adds two numbers', parameters: TOOLS![0]!.parameters } },
    ]);
  });

  it('sends tool calls back with object arguments and results as role "tool" with tool_name', async () => {
    server.script(ollamaChatReply({ text: 'It is 5.' }));
    await provider.chat({
      model: MODEL,
      tools: TOOLS,
      messages: [
        { role: 'user', content: '2+3?' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'call_0', name: 'add', arguments: { a: 2, b: 3 } }] },
        { role: 'tool', toolCallId: 'call_0', name: 'add', content: '5' },
      ],
    });
    expect(server.requests[0]!.body.messages).toEqual([
      { role: 'user', content: '2+3?' },
      { role: 'assistant', content: '', tool_calls: [{ function: { name: 'add', arguments: { a: 2, b: 3 } } }] },
      { role: 'tool', content: '5', tool_name: 'add' },
    ]);
  });

  it('sends images as base64 for vision models', async () => {
    server.script(ollamaChatReply({ text: 'A dot.' }));
    await provider.chat({
      model: 'llava:7b',
      messages: [{ role: 'user', content: 'What?', images: [{ mimeType: 'image/png', base64: 'iVBORw0KGgo=' }] }],
    });
    expect(server.requests[0]!.body.messages[0]).toEqual({ role: 'user', content: 'What?', images: ['iVBORw0KGgo='] });
  });

  it('embeds through /api/embed', async () => {
    server.script(
      ollamaEmbedReply(
        [
          [0.1, 0.2],
          [0.3, 0.4],
        ],
        'nomic-embed-text',
        9,
      ),
    );
    const res = await provider.embed!({ texts: ['a', 'b'] });
    expect(res).toEqual({
      vectors: [
        [0.1, 0.2],
        [0.3, 0.4],
      ],
      usage: { inputTokens: 9, outputTokens: 0 },
      model: 'nomic-embed-text',
    });
    expect(server.requests[0]!.path).toBe('/api/embed');
    expect(server.requests[0]!.body).toEqual({ model: 'nomic-embed-text', input: ['a', 'b'] });
  });

  it('embeds with the model the request names', async () => {
    server.script(ollamaEmbedReply([[1]], 'mxbai-embed-large'));
    await provider.embed!({ texts: ['x'], model: 'mxbai-embed-large' });
    expect(server.requests[0]!.body.model).toBe('mxbai-embed-large');
  });

  it('retries a 429 honouring Retry-After, then succeeds', async () => {
    server.script(ollamaError(429, 'busy', { 'retry-after': '0' }), ollamaChatReply({ text: 'ok' }));
    expect((await provider.chat(hi)).text).toBe('ok');
    expect(server.requests).toHaveLength(2);
  });

  it('reports the Retry-After of a 429 it gives up on', async () => {
    const busy = () => ollamaError(429, 'busy', { 'retry-after': '0' });
    server.script(busy(), busy(), busy(), busy(), ollamaChatReply({ text: 'too late' }));
    const e = await rejection(provider.chat(hi));
    expect(e.info).toMatchObject({ provider: 'providerG', status: 429, retryable: true, retryAfterMs: 0 });
    expect(server.requests).toHaveLength(4);
  });

  it('retries a 500 and a dropped connection, then succeeds', async () => {
    server.script(
      ollamaError(500, 'model runner crashed', { 'retry-after': '0' }),
      { reset: true },
      ollamaChatReply({ text: 'recovered' }),
    );
    expect((await provider.chat(hi)).text).toBe('recovered');
    expect(server.requests).toHaveLength(3);
  });

  it('does not retry a 404 (model not pulled) and says so', async () => {
    server.script(ollamaError(404, `model "${MODEL}" not found, try pulling it first`), ollamaChatReply({ text: 'never' }));
    const e = await rejection(provider.chat(hi));
    expect(server.requests).toHaveLength(1);
    expect(e.info).toMatchObject({ provider: 'providerG', status: 404, retryable: false });
    expect(e.message).toContain('not found');
  });

  it('does not retry a 400', async () => {
    server.script(ollamaError(400, 'invalid options'), ollamaChatReply({ text: 'never' }));
    const e = await rejection(provider.chat(hi));
    expect(server.requests).toHaveLength(1);
    expect(e.info).toMatchObject({ status: 400, retryable: false });
  });

  it('is cancelled by the caller’s signal without retrying', async () => {
    server.script({ hang: true }, ollamaChatReply({ text: 'never' }));
    const ac = new AbortController();
    const p = provider.chat({ ...hi, signal: ac.signal });
    for (let i = 0; i < 400 && server.requests.length < 1; i++) await new Promise((r) => setTimeout(r, 10));
    ac.abort();
    const e = await rejection(p);
    expect(e.message).toMatch(/cancelled/);
    expect(server.requests).toHaveLength(1);
  });

  it('gives up on an attempt after the request timeout', async () => {
    server.script({ hang: true });
    const e = await rejection(provider.chat({ ...hi, timeoutMs: 200 }));
    expect(e.message).toMatch(/timeout/);
    expect(server.requests).toHaveLength(1);
  });
});

describe('providerG configuration', () => {
  it('is off by default: configured() says providerGEnabled is false, and nothing is called', async () => {
    const server = await startOllamaServer();
    const k = await boot({ overrides: { providerGApiUrl: server.url } });
    try {
      const c = k.provider.configured();
      expect(c.ok).toBe(false);
      expect(c.ok ? '' : c.missing).toMatch(/providerGEnabled is false/);
      expect(c.ok ? '' : c.missing).toMatch(/PROVIDERG_ENABLED/);
      const e = await rejection(k.provider.chat(hi));
      expect(e.message).toMatch(/providerGEnabled/);
      await rejection(k.provider.embed!({ texts: ['x'] }));
      expect(server.requests).toHaveLength(0);
    } finally {
      await k.close();
      await server.close();
    }
  });

  it('is enabled and pointed by PROVIDERG_ENABLED and PROVIDERG_API_URL', async () => {
    const server = await startOllamaServer();
    const k = await boot({ env: { PROVIDERG_ENABLED: 'true', PROVIDERG_API_URL: server.url } });
    try {
      expect(k.provider.configured()).toEqual({ ok: true });
      server.script(ollamaChatReply({ text: 'env ok' }));
      expect((await k.provider.chat(hi)).text).toBe('env ok');
    } finally {
      await k.close();
      await server.close();
    }
  });

  it('defaults providerGApiUrl to loopback port 11434, classed SAFE', async () => {
    const k = await boot({});
    try {
      expect(k.kernel.config.get('providerGApiUrl')).toBe('http://127.0.0.1:11434');
      expect(k.kernel.config.get('providerGEnabled')).toBe(false);
      const info = k.kernel.registry.use<{ configKeys(): Array<{ key: string; policy: string }> }>('kernel:info')!;
      expect(info.configKeys().find((x) => x.key === 'providerGApiUrl')?.policy).toBe('SAFE');
    } finally {
      await k.close();
    }
  });
});
