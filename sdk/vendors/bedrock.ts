/**
 * AWS Bedrock Converse adapter (providerD) over @aws-sdk/client-bedrock-runtime, imported only when the first
 * call is made. Maps Keel's chat contract to Converse: `system` blocks apart, `toolConfig` with JSON schemas,
 * `toolUse` blocks from the assistant, `toolResult` blocks in a user turn, image blocks (png, jpeg, gif, webp)
 * for vision, usage from `inputTokens`/`outputTokens`.
 *
 * Requests are SigV4-signed with the configured credentials only: the SDK's credential chain, its bearer-token
 * scheme (AWS_BEARER_TOKEN_BEDROCK) and its own retries are not used (`maxAttempts: 1`, `authSchemePreference:
 * ['sigv4']`), so the one policy of {@link callWithRetry} applies (per-attempt timeout, the caller's signal,
 * 429/5xx/resets retried honouring Retry-After).
 */
import type { ChatMessage, ChatRequest, ChatResponse, ToolCall } from '../providers.js';
import { badRequest, callWithRetry, parseToolArguments, registerSecret, toProviderError } from './common.js';

export interface BedrockSettings {
  /** Provider id used in errors (`providerD`). */
  provider: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  /** Endpoint override (default: the regional bedrock-runtime endpoint). */
  baseUrl?: string;
  timeoutMs?: number;
  retries?: number;
  /** First backoff in ms (tests make it small). */
  baseMs?: number;
}

type Block = Record<string, unknown>;
interface VendorMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

const IMAGE_FORMATS: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpeg',
  'image/jpg': 'jpeg',
  'image/gif': 'gif',
  'image/webp': 'webp',
};

/** Keel messages → `{ system, messages }` of Converse (consecutive turns of one role merged; no empty text blocks). */
export function toConverseMessages(
  messages: ChatMessage[],
  provider = 'providerD',
): { system: Array<{ text: string }>; messages: VendorMessage[] } {
  const system: Array<{ text: string }> = [];
  const out: VendorMessage[] = [];
  const push = (role: VendorMessage['role'], blocks: Block[]) => {
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    if (m.role === 'system') {
      if (m.content.trim()) system.push({ text: m.content });
    } else if (m.role === 'user') {
      const blocks: Block[] = [];
      for (const img of m.images ?? []) {
        const format = IMAGE_FORMATS[img.mimeType.toLowerCase()];
        if (!format) throw badRequest(provider, `image type ${img.mimeType} is not supported (png, jpeg, gif or webp)`);
        blocks.push({ image: { format, source: { bytes: new Uint8Array(Buffer.from(img.base64, 'base64')) } } });
      }
      if (m.content.trim()) blocks.push({ text: m.content });
      push('user', blocks.length ? blocks : [{ text: '.' }]);
    } else if (m.role === 'assistant') {
      const blocks: Block[] = [];
      if (m.content.trim()) blocks.push({ text: m.content });
      for (const c of m.toolCalls ?? []) blocks.push({ toolUse: { toolUseId: c.id, name: c.name, input: c.arguments ?? {} } });
      push('assistant', blocks.length ? blocks : [{ text: '.' }]);
    } else {
      push('user', [{ toolResult: { toolUseId: m.toolCallId ?? '', content: [{ text: m.content || '(empty result)' }] } }]);
    }
  }
  return { system, messages: out };
}

type BedrockModule = typeof import('@aws-sdk/client-bedrock-runtime');
let sdk: Promise<BedrockModule> | undefined;

/** An AWS service error (status in `$metadata`, headers in `$response`) in the shape toProviderError reads. */
function fromAwsError(provider: string, e: unknown, secrets: Array<string | undefined>): unknown {
  if (!e || typeof e !== 'object') return e;
  const o = e as {
    name?: string;
    message?: string;
    code?: string;
    $metadata?: { httpStatusCode?: number };
    $response?: { headers?: unknown };
  };
  const status = o.$metadata?.httpStatusCode;
  if (typeof status === 'number' && status >= 400) {
    const name = o.name && o.name !== 'Error' ? `${o.name}: ` : '';
    return toProviderError(provider, { status, headers: o.$response?.headers, message: `${name}${o.message ?? ''}` }, secrets);
  }
  // HTTP/2 stream or session failures (a reset, a GOAWAY) are connection failures worth another attempt.
  if (typeof o.code === 'string' && /^ERR_HTTP2_(STREAM|SESSION|GOAWAY|STREAM_CANCEL|INVALID_SESSION)/.test(o.code)) {
    return toProviderError(provider, Object.assign(new Error('connection failed'), { code: 'ECONNRESET' }), secrets);
  }
  return e;
}

/** A Converse client kept across calls while the settings stay the same; `destroy` closes its connections. */
export function createBedrockClient() {
  let current: { key: string; client: InstanceType<BedrockModule['BedrockRuntimeClient']> } | undefined;

  async function clientFor(s: BedrockSettings) {
    const key = JSON.stringify([s.region, s.accessKeyId, s.secretAccessKey, s.sessionToken ?? '', s.baseUrl ?? '']);
    if (current?.key === key) return { client: current.client, mod: await sdk! };
    const mod = await (sdk ??= import('@aws-sdk/client-bedrock-runtime'));
    current?.client.destroy();
    const client = new mod.BedrockRuntimeClient({
      region: s.region,
      credentials: {
        accessKeyId: s.accessKeyId,
        secretAccessKey: s.secretAccessKey,
        ...(s.sessionToken ? { sessionToken: s.sessionToken } : {}),
      },
      ...(s.baseUrl ? { endpoint: s.baseUrl } : {}),
      maxAttempts: 1,
      authSchemePreference: ['sigv4'],
    });
    current = { key, client };
    return { client, mod };
  }

  async function chat(s: BedrockSettings, req: ChatRequest): Promise<ChatResponse> {
    for (const v of [s.secretAccessKey, s.sessionToken, s.accessKeyId]) registerSecret(v);
    const secrets = [s.secretAccessKey, s.sessionToken, s.accessKeyId];
    const { client, mod } = await clientFor(s);
    const { system, messages } = toConverseMessages(req.messages, s.provider);
    const input: Record<string, unknown> = { modelId: req.model, messages };
    if (system.length) input.system = system;
    const inference: Record<string, number> = {};
    if (req.maxTokens !== undefined) inference.maxTokens = req.maxTokens;
    if (req.temperature !== undefined) inference.temperature = req.temperature;
    if (Object.keys(inference).length) input.inferenceConfig = inference;
    if (req.tools?.length) {
      input.toolConfig = {
        tools: req.tools.map((t) => ({
          toolSpec: { name: t.name, description: t.description, inputSchema: { json: { type: 'object', ...t.parameters } } },
        })),
      };
    }
    const timeoutMs = req.timeoutMs ?? s.timeoutMs;
    const out = await callWithRetry(
      s.provider,
      async (signal) => {
        try {
          return await client.send(new mod.ConverseCommand(input as never), { abortSignal: signal });
        } catch (e) {
          throw fromAwsError(s.provider, e, secrets);
        }
      },
      {
        ...(req.signal ? { signal: req.signal } : {}),
        ...(timeoutMs ? { timeoutMs } : {}),
        ...(s.retries !== undefined ? { retries: s.retries } : {}),
        ...(s.baseMs !== undefined ? { baseMs: s.baseMs } : {}),
        secrets,
      },
    );
    const text: string[] = [];
    const toolCalls: ToolCall[] = [];
    for (const b of (out.output?.message?.content ?? []) as Array<{
      text?: string;
      toolUse?: { toolUseId?: string; name?: string; input?: unknown };
    }>) {
      if (typeof b.text === 'string') text.push(b.text);
      else if (b.toolUse) {
        toolCalls.push({
          id: b.toolUse.toolUseId ?? `call_${toolCalls.length}`,
          name: b.toolUse.name ?? '',
          ...parseToolArguments(b.toolUse.input),
        });
      }
    }
    return {
      text: text.join(''),
      toolCalls,
      usage: { inputTokens: out.usage?.inputTokens ?? 0, outputTokens: out.usage?.outputTokens ?? 0 },
      model: req.model,
      ...(out.stopReason ? { finishReason: out.stopReason } : {}),
    };
  }

  return {
    chat,
    destroy(): void {
      current?.client.destroy();
      current = undefined;
    },
  };
}
