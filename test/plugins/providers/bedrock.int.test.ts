/**
 * providerD (AWS Bedrock Converse) through the real kernel and the real @aws-sdk/client-bedrock-runtime, with an
 * endpoint override to a loopback server that speaks Converse (HTTP/2, as the client does) and test credentials.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ProviderError, type ChatRequest, type ProviderCapability } from '../../../sdk/index.js';
import { awsError, converseReply, startBedrockServer, type ScriptedServer } from '../../fakes/bedrock-server.js';
import { bootKernel } from '../../../testing/index.js';

const ACCESS = 'AKIDKEELTEST0001';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYKEELTESTKEY';
const TOKEN = 'FwoGZXIvYXdzEKEELTESTSESSIONTOKEN';
const MODEL = 'anthropic.claude-3-haiku-20240307-v1:0';

async function boot(o: { env?: Record<string, string>; overrides?: Record<string, unknown> }) {
  const t = await bootKernel({ builtins: ['providerD'], userPlugins: false, env: o.env ?? {}, config: o.overrides ?? {} });
  return { kernel: t.kernel, provider: t.kernel.registry.use<ProviderCapability>('provider:providerD')!, close: t.close };
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

function noSecretIn(e: ProviderError): void {
  const text = `${e.message} ${JSON.stringify(e.info)}`;
  expect(text).not.toContain(SECRET);
  expect(text).not.toContain(TOKEN);
}

const TOOLS: ChatRequest['tools'] = [
  {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
];
const hi: ChatRequest = { model: MODEL, messages: [{ role: 'user', content: 'hi' }] };

describe('providerD (Bedrock Converse)', () => {
  let server: ScriptedServer;
  let k: Awaited<ReturnType<typeof boot>>;
  let provider: ProviderCapability;

  beforeEach(async () => {
    server = await startBedrockServer();
    k = await boot({
      overrides: {
        providerDRegion: 'us-east-1',
        providerDAccessKeyId: ACCESS,
        providerDSecretAccessKey: SECRET,
        providerDBaseUrl: server.url,
      },
    });
    provider = k.provider;
  });
  afterEach(async () => {
    await k.close();
    await server.close();
  });

  it('is loaded and configured, with vision and without embeddings', () => {
    expect(k.kernel.host.status('providerD')?.state).toBe('loaded');
    expect(provider.configured()).toEqual({ ok: true });
    expect(provider.vision).toBe(true);
    expect(provider.embed).toBeUndefined();
  });

  it('chats through Converse: SigV4-signed with the access key id, never the secret; system apart; usage mapped', async () => {
    server.script(converseReply({ text: 'Hello from Bedrock.', inputTokens: 31, outputTokens: 6 }));
    const res = await provider.chat({
      model: MODEL,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Say hello.' },
      ],
      maxTokens: 256,
      temperature: 0.1,
    });
    expect(res).toMatchObject({
      text: 'Hello from Bedrock.',
      toolCalls: [],
      usage: { inputTokens: 31, outputTokens: 6 },
      model: MODEL,
      finishReason: 'end_turn',
    });
    expect(server.requests).toHaveLength(1);
    const r = server.requests[0]!;
    expect(r.method).toBe('POST');
    expect(r.path).toBe(`/model/${encodeURIComponent(MODEL)}/converse`);
    const auth = String(r.headers.authorization);
    expect(auth.startsWith('AWS4-HMAC-SHA256 ')).toBe(true);
    expect(auth).toContain(`Credential=${ACCESS}/`);
    expect(auth).toContain('/us-east-1/bedrock/aws4_request');
    expect(JSON.stringify(r.headers)).not.toContain(SECRET);
    expect(JSON.stringify(r.body)).not.toContain(SECRET);
    expect(r.headers['x-amz-security-token']).toBeUndefined();
    // One policy: the SDK makes a single attempt per call.
    expect(r.headers['amz-sdk-request']).toBe('attempt=1; max=1');
    expect(r.body).toEqual({
      system: [{ text: 'Be brief.' }],
      messages: [{ role: 'user', content: [{ text: 'Say hello.' }] }],
      inferenceConfig: { maxTokens: 256, temperature: 0.1 },
    });
  });

  it('offers tools in toolConfig and returns toolUse blocks as tool calls', async () => {
    server.script(
      converseReply({ text: 'Checking.', toolUses: [{ toolUseId: 'tooluse_1', name: 'get_weather', input: { city: 'Oslo' } }] }),
    );
    const res = await provider.chat({ model: MODEL, messages: [{ role: 'user', content: 'Weather in Oslo?' }], tools: TOOLS });
    expect(res.toolCalls).toEqual([{ id: 'tooluse_1', name: 'get_weather', arguments: { city: 'Oslo' } }]);
    expect(res.text).toBe('Checking.');
    expect(res.finishReason).toBe('tool_use');
    expect(server.requests[0]!.body.toolConfig).toEqual({
      tools: [{ toolSpec: { name: 'get_weather', description: 'Weather for a city', inputSchema: { json: TOOLS![0]!.parameters } } }],
    });
  });

  it('sends tool calls back as toolUse blocks and results as toolResult blocks in one user turn', async () => {
    server.script(converseReply({ text: 'Oslo is cold, Rome is warm.' }));
    await provider.chat({
      model: MODEL,
      tools: TOOLS,
      messages: [
        { role: 'user', content: 'Weather in Oslo and Rome?' },
        {
          role: 'assistant',
          content: 'Let me check.',
          toolCalls: [
            { id: 'tu_1', name: 'get_weather', arguments: { city: 'Oslo' } },
            { id: 'tu_2', name: 'get_weather', arguments: { city: 'Rome' } },
          ],
        },
        { role: 'tool', toolCallId: 'tu_1', name: 'get_weather', content: '-3 C' },
        { role: 'tool', toolCallId: 'tu_2', name: 'get_weather', content: '21 C' },
      ],
    });
    expect(server.requests[0]!.body.messages).toEqual([
      { role: 'user', content: [{ text: 'Weather in Oslo and Rome?' }] },
      {
        role: 'assistant',
        content: [
          { text: 'Let me check.' },
          { toolUse: { toolUseId: 'tu_1', name: 'get_weather', input: { city: 'Oslo' } } },
          { toolUse: { toolUseId: 'tu_2', name: 'get_weather', input: { city: 'Rome' } } },
        ],
      },
      {
        role: 'user',
        content: [
          { toolResult: { toolUseId: 'tu_1', content: [{ text: '-3 C' }] } },
          { toolResult: { toolUseId: 'tu_2', content: [{ text: '21 C' }] } },
        ],
      },
    ]);
  });

  it('sends images as image blocks (format + bytes)', async () => {
    server.script(converseReply({ text: 'A cat.' }));
    await provider.chat({
      model: MODEL,
      messages: [{ role: 'user', content: 'What is it?', images: [{ mimeType: 'image/jpeg', base64: '/9j/4AAQSkZJRg==' }] }],
    });
    expect(server.requests[0]!.body.messages[0].content).toEqual([
      { image: { format: 'jpeg', source: { bytes: '/9j/4AAQSkZJRg==' } } },
      { text: 'What is it?' },
    ]);
  });

  it('refuses an image type Bedrock does not take, without calling', async () => {
    const e = await rejection(
      provider.chat({ model: MODEL, messages: [{ role: 'user', content: 'x', images: [{ mimeType: 'image/tiff', base64: 'AAAA' }] }] }),
    );
    expect(e.info).toMatchObject({ status: 400, retryable: false });
    expect(server.requests).toHaveLength(0);
  });

  it('retries a ThrottlingException (429) honouring Retry-After, then succeeds', async () => {
    server.script(awsError(429, 'ThrottlingException', 'Too many requests', { 'retry-after': '0' }), converseReply({ text: 'ok' }));
    expect((await provider.chat(hi)).text).toBe('ok');
    expect(server.requests).toHaveLength(2);
  });

  it('retries a 500 and a reset stream, then succeeds', async () => {
    server.script(
      awsError(500, 'InternalServerException', 'boom', { 'retry-after': '0' }),
      { reset: true },
      converseReply({ text: 'recovered' }),
    );
    expect((await provider.chat(hi)).text).toBe('recovered');
    expect(server.requests).toHaveLength(3);
  });

  it('does not retry a ValidationException (400); the error names provider, status and type, never the secret', async () => {
    server.script(awsError(400, 'ValidationException', 'The provided model identifier is invalid.'), converseReply({ text: 'never' }));
    const e = await rejection(provider.chat(hi));
    expect(server.requests).toHaveLength(1);
    expect(e.info).toMatchObject({ provider: 'providerD', status: 400, retryable: false });
    expect(e.message).toContain('ValidationException');
    noSecretIn(e);
  });

  it('an error body that echoes the secret is redacted', async () => {
    server.script(awsError(403, 'UnrecognizedClientException', `Signature mismatch for secret ${SECRET}.`));
    const e = await rejection(provider.chat(hi));
    expect(e.info).toMatchObject({ status: 403, retryable: false });
    noSecretIn(e);
  });

  it('reports the Retry-After of the throttling it gives up on', async () => {
    const t = () => awsError(429, 'ThrottlingException', 'slow down', { 'retry-after': '0' });
    server.script(t(), t(), t(), t(), converseReply({ text: 'too late' }));
    const e = await rejection(provider.chat(hi));
    expect(e.info).toMatchObject({ status: 429, retryable: true, retryAfterMs: 0 });
    expect(server.requests).toHaveLength(4);
  });

  it('is cancelled by the caller’s signal without retrying', async () => {
    server.script({ hang: true }, converseReply({ text: 'never' }));
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

describe('providerD configuration', () => {
  it('names every missing key with its environment variables', async () => {
    const k = await boot({});
    try {
      const c = k.provider.configured();
      expect(c.ok).toBe(false);
      const missing = c.ok ? '' : c.missing;
      for (const s of [
        'providerDRegion',
        'AWS_REGION',
        'providerDAccessKeyId',
        'AWS_ACCESS_KEY_ID',
        'providerDSecretAccessKey',
        'AWS_SECRET_ACCESS_KEY',
      ]) {
        expect(missing).toContain(s);
      }
      expect(missing).not.toContain('providerDSessionToken');
      await rejection(k.provider.chat(hi));
    } finally {
      await k.close();
    }
  });

  it('names only what is still missing', async () => {
    const k = await boot({ env: { AWS_REGION: 'eu-west-1', AWS_ACCESS_KEY_ID: ACCESS } });
    try {
      const c = k.provider.configured();
      expect(c.ok).toBe(false);
      const missing = c.ok ? '' : c.missing;
      expect(missing).toContain('providerDSecretAccessKey');
      expect(missing).not.toContain('providerDRegion');
      expect(missing).not.toContain('providerDAccessKeyId');
    } finally {
      await k.close();
    }
  });

  it('takes region and credentials from the AWS_* environment, with the session token', async () => {
    const server = await startBedrockServer();
    const k = await boot({
      env: {
        AWS_REGION: 'eu-west-1',
        AWS_ACCESS_KEY_ID: ACCESS,
        AWS_SECRET_ACCESS_KEY: SECRET,
        AWS_SESSION_TOKEN: TOKEN,
        PROVIDERD_BASE_URL: server.url,
      },
    });
    try {
      expect(k.provider.configured()).toEqual({ ok: true });
      server.script(converseReply({ text: 'env ok' }));
      expect((await k.provider.chat(hi)).text).toBe('env ok');
      const h = server.requests[0]!.headers;
      expect(String(h.authorization)).toContain(`Credential=${ACCESS}/`);
      expect(String(h.authorization)).toContain('/eu-west-1/bedrock/aws4_request');
      expect(String(h.authorization)).toContain('x-amz-security-token');
      expect(h['x-amz-security-token']).toBe(TOKEN);
      expect(JSON.stringify(h)).not.toContain(SECRET);
    } finally {
      await k.close();
      await server.close();
    }
  });

  it('PROVIDERD_* wins over AWS_*', async () => {
    const server = await startBedrockServer();
    const k = await boot({
      env: {
        AWS_REGION: 'eu-west-1',
        PROVIDERD_REGION: 'ap-southeast-2',
        AWS_ACCESS_KEY_ID: 'AKIDFROMAWSENV00',
        PROVIDERD_ACCESS_KEY_ID: ACCESS,
        AWS_SECRET_ACCESS_KEY: 'other-secret-value',
        PROVIDERD_SECRET_ACCESS_KEY: SECRET,
        PROVIDERD_SESSION_TOKEN: TOKEN,
        PROVIDERD_BASE_URL: server.url,
      },
    });
    try {
      server.script(converseReply({ text: 'ok' }));
      await k.provider.chat(hi);
      const h = server.requests[0]!.headers;
      expect(String(h.authorization)).toContain(`Credential=${ACCESS}/20`);
      expect(String(h.authorization)).toContain('/ap-southeast-2/bedrock/');
      expect(h['x-amz-security-token']).toBe(TOKEN);
    } finally {
      await k.close();
      await server.close();
    }
  });

  it('classes the credentials LOCKED and secret, and the endpoint override LOCKED', async () => {
    const k = await boot({});
    try {
      const info = k.kernel.registry.use<{ configKeys(): Array<{ key: string; policy: string; secret: boolean }> }>('kernel:info')!;
      const keys = Object.fromEntries(info.configKeys().map((x) => [x.key, x]));
      expect(keys.providerDAccessKeyId).toMatchObject({ policy: 'LOCKED', secret: true });
      expect(keys.providerDSecretAccessKey).toMatchObject({ policy: 'LOCKED', secret: true });
      expect(keys.providerDSessionToken).toMatchObject({ secret: true });
      expect(keys.providerDBaseUrl).toMatchObject({ policy: 'LOCKED' });
    } finally {
      await k.close();
    }
  });
});
