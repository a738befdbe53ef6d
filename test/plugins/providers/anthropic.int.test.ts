/**
 * providerC (Anthropic) through the real kernel and the real @anthropic-ai/sdk, against a loopback server that
 * speaks the Messages API.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Kernel } from '../../../kernel/kernel.js';
import { ProviderError, type ChatRequest, type ProviderCapability } from '../../../sdk/index.js';
import { anthropicError, anthropicMessage, startAnthropicServer, type ScriptedServer } from '../../fakes/anthropic-server.js';
import { bootKernel } from '../../../testing/index.js';

const KEY = 'sk-ant-test-0123456789abcdef';

async function boot(id: string, o: { env?: Record<string, string>; overrides?: Record<string, unknown> }) {
  const t = await bootKernel({ builtins: [id], userPlugins: false, env: o.env ?? {}, config: o.overrides ?? {} });
  return { kernel: t.kernel, provider: t.kernel.registry.use<ProviderCapability>(`provider:${id}`)!, close: t.close };
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
    name: 'read_file',
    description: 'Reads a file',
    parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
];

describe('providerC (Anthropic)', () => {
  let server: ScriptedServer;
  let k: Awaited<ReturnType<typeof boot>>;
  let kernel: Kernel;
  let provider: ProviderCapability;

  beforeEach(async () => {
    server = await startAnthropicServer();
    k = await boot('providerC', { overrides: { providerCApiKey: KEY, providerCBaseUrl: server.url } });
    kernel = k.kernel;
    provider = k.provider;
  });
  afterEach(async () => {
    await k.close();
    await server.close();
  });

  it('is loaded, configured, and offers vision but no embeddings', () => {
    expect(kernel.host.status('providerC')?.state).toBe('loaded');
    expect(provider.configured()).toEqual({ ok: true });
    expect(provider.vision).toBe(true);
    expect(provider.embed).toBeUndefined();
  });

  it('chats: system prompt apart, key in a header only, text and usage mapped', async () => {
    server.script(anthropicMessage({ text: 'Hello there.', inputTokens: 21, outputTokens: 4, model: 'claude-test-1' }));
    const res = await provider.chat({
      model: 'claude-test-1',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Say hello.' },
      ],
      temperature: 0.2,
    });
    expect(res).toMatchObject({
      text: 'Hello there.',
      toolCalls: [],
      usage: { inputTokens: 21, outputTokens: 4 },
      model: 'claude-test-1',
      finishReason: 'end_turn',
    });
    expect(server.requests).toHaveLength(1);
    const r = server.requests[0]!;
    expect(r.method).toBe('POST');
    expect(r.path).toBe('/v1/messages');
    // The SDK sends the key in a header (x-api-key in older releases, Authorization: Bearer in 1.12), never in the URL.
    expect(authHeader(r.headers)).toContain(KEY);
    expect(r.headers['anthropic-version']).toBeTruthy();
    expect(r.path).not.toContain(KEY);
    expect(r.body).toMatchObject({
      model: 'claude-test-1',
      system: 'You are terse.',
      temperature: 0.2,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Say hello.' }] }],
    });
    expect(r.body.max_tokens).toBeGreaterThan(0);
  });

  it('offers tools natively and returns the tool_use blocks as tool calls', async () => {
    server.script(anthropicMessage({ text: 'Reading it.', toolUses: [{ id: 'toolu_1', name: 'read_file', input: { path: '/tmp/a' } }] }));
    const res = await provider.chat({ model: 'claude-test-1', messages: [{ role: 'user', content: 'Read /tmp/a' }], tools: TOOLS });
    expect(res.toolCalls).toEqual([{ id: 'toolu_1', name: 'read_file', arguments: { path: '/tmp/a' } }]);
    expect(res.text).toBe('Reading it.');
    expect(res.finishReason).toBe('tool_use');
    expect(server.requests[0]!.body.tools).toEqual([
      { name: 'read_file', description: 'Reads a file', input_schema: TOOLS![0]!.parameters },
    ]);
  });

  it('sends tool calls back as tool_use blocks and results as tool_result blocks in one user turn', async () => {
    server.script(anthropicMessage({ text: 'Both files are short.' }));
    await provider.chat({
      model: 'claude-test-1',
      tools: TOOLS,
      messages: [
        { role: 'user', content: 'Read a and b' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [
            { id: 'toolu_a', name: 'read_file', arguments: { path: 'a' } },
            { id: 'toolu_b', name: 'read_file', arguments: { path: 'b' } },
          ],
        },
        { role: 'tool', toolCallId: 'toolu_a', name: 'read_file', content: 'A' },
        { role: 'tool', toolCallId: 'toolu_b', name: 'read_file', content: 'B' },
      ],
    });
    expect(server.requests[0]!.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Read a and b' }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'toolu_a', name: 'read_file', input: { path: 'a' } },
          { type: 'tool_use', id: 'toolu_b', name: 'read_file', input: { path: 'b' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_a', content: 'A' },
          { type: 'tool_result', tool_use_id: 'toolu_b', content: 'B' },
        ],
      },
    ]);
  });

  it('sends images as base64 image blocks', async () => {
    server.script(anthropicMessage({ text: 'A red dot.' }));
    await provider.chat({
      model: 'claude-test-1',
      messages: [{ role: 'user', content: 'What is this?', images: [{ mimeType: 'image/png', base64: 'iVBORw0KGgo=' }] }],
    });
    expect(server.requests[0]!.body.messages[0].content).toEqual([
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
      { type: 'text', text: 'What is this?' },
    ]);
  });

  it('retries a 429 after the Retry-After the server asks for, then succeeds', async () => {
    server.script(anthropicError(429, 'rate_limit_error', 'slow down', { 'retry-after': '0' }), anthropicMessage({ text: 'ok' }));
    const res = await provider.chat({ model: 'claude-test-1', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.text).toBe('ok');
    expect(server.requests).toHaveLength(2);
  });

  it('retries a 500 and a dropped connection, then succeeds', async () => {
    server.script(
      anthropicError(500, 'api_error', 'boom', { 'retry-after': '0' }),
      { reset: true },
      anthropicMessage({ text: 'recovered' }),
    );
    const res = await provider.chat({ model: 'claude-test-1', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.text).toBe('recovered');
    expect(server.requests).toHaveLength(3);
  });

  it('does not retry a 400, and its error names the provider and status but never the key', async () => {
    server.script(anthropicError(400, 'invalid_request_error', `max_tokens too large (key ${KEY})`), anthropicMessage({ text: 'never' }));
    const e = await rejection(provider.chat({ model: 'claude-test-1', messages: [{ role: 'user', content: 'hi' }] }));
    expect(server.requests).toHaveLength(1);
    expect(e.info).toMatchObject({ provider: 'providerC', status: 400, retryable: false });
    expect(e.message).toContain('providerC');
    expect(e.message).not.toContain(KEY);
    expect(JSON.stringify(e.info)).not.toContain(KEY);
  });

  it('a 401 is not retried and never echoes the key', async () => {
    server.script(anthropicError(401, 'authentication_error', 'invalid x-api-key'));
    const e = await rejection(provider.chat({ model: 'claude-test-1', messages: [{ role: 'user', content: 'hi' }] }));
    expect(e.info).toMatchObject({ status: 401, retryable: false });
    expect(e.message).not.toContain(KEY);
    expect(server.requests).toHaveLength(1);
  });

  it('reports the Retry-After of a 429 it gives up on (after the first attempt and three retries)', async () => {
    const limited = () => anthropicError(429, 'rate_limit_error', 'slow down', { 'retry-after': '0' });
    server.script(limited(), limited(), limited(), limited(), anthropicMessage({ text: 'too late' }));
    const e = await rejection(provider.chat({ model: 'claude-test-1', messages: [{ role: 'user', content: 'hi' }] }));
    expect(e.info).toMatchObject({ provider: 'providerC', status: 429, retryable: true, retryAfterMs: 0 });
    expect(server.requests).toHaveLength(4);
  });

  it('is cancelled by the caller’s signal without retrying', async () => {
    server.script({ hang: true }, anthropicMessage({ text: 'never' }));
    const ac = new AbortController();
    const p = provider.chat({ model: 'claude-test-1', messages: [{ role: 'user', content: 'hi' }], signal: ac.signal });
    await waitForRequests(server, 1);
    ac.abort();
    const e = await rejection(p);
    expect(e.message).toMatch(/cancelled/);
    expect(e.info.retryable).toBe(false);
    expect(server.requests).toHaveLength(1);
  });

  it('gives up on an attempt after the request timeout', async () => {
    server.script({ hang: true });
    const e = await rejection(provider.chat({ model: 'claude-test-1', messages: [{ role: 'user', content: 'hi' }], timeoutMs: 200 }));
    expect(e.message).toMatch(/timeout/);
    expect(server.requests).toHaveLength(1);
  });
});

describe('providerC configuration', () => {
  it('names the missing key and its environment variable, and refuses to call', async () => {
    const k = await boot('providerC', {});
    try {
      const c = k.provider.configured();
      expect(c.ok).toBe(false);
      expect(!c.ok && c.missing).toMatch(/providerCApiKey/);
      expect(!c.ok && c.missing).toMatch(/PROVIDERC_API_KEY/);
      const e = await rejection(k.provider.chat({ model: 'claude-test-1', messages: [{ role: 'user', content: 'hi' }] }));
      expect(e.message).toMatch(/providerCApiKey/);
    } finally {
      await k.close();
    }
  });

  it('reads the key and base URL from PROVIDERC_API_KEY and PROVIDERC_BASE_URL', async () => {
    const server = await startAnthropicServer();
    const k = await boot('providerC', { env: { PROVIDERC_API_KEY: KEY, PROVIDERC_BASE_URL: server.url } });
    try {
      server.script(anthropicMessage({ text: 'env ok' }));
      expect((await k.provider.chat({ model: 'claude-test-1', messages: [{ role: 'user', content: 'hi' }] })).text).toBe('env ok');
      expect(authHeader(server.requests[0]!.headers)).toContain(KEY);
    } finally {
      await k.close();
      await server.close();
    }
  });

  it('classes the key APPROVAL and secret, and the base URL LOCKED', async () => {
    const k = await boot('providerC', {});
    try {
      const info = k.kernel.registry.use<{ configKeys(): Array<{ key: string; policy: string; secret: boolean }> }>('kernel:info')!;
      const keys = Object.fromEntries(info.configKeys().map((x) => [x.key, x]));
      expect(keys.providerCApiKey).toMatchObject({ policy: 'APPROVAL', secret: true });
      expect(keys.providerCBaseUrl).toMatchObject({ policy: 'LOCKED' });
    } finally {
      await k.close();
    }
  });
});

async function waitForRequests(server: ScriptedServer, n: number): Promise<void> {
  for (let i = 0; i < 400 && server.requests.length < n; i++) await new Promise((r) => setTimeout(r, 10));
}

function authHeader(h: Record<string, unknown>): string {
  return String(h['x-api-key'] ?? h.authorization ?? '');
}
