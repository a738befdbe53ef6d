/**
 * Anthropic Messages API adapter (providerC) over the official @anthropic-ai/sdk, imported only when the first
 * call is made. Maps Keel's chat contract to the vendor's shape: system prompt apart, `tool_use` blocks from the
 * assistant, `tool_result` blocks in a user turn, base64 image blocks for vision, usage from
 * `input_tokens`/`output_tokens`.
 *
 * Retries: the SDK's own retries are off (`maxRetries: 0`) so the one policy of {@link callWithRetry} applies
 * (per-attempt timeout, the caller's signal, 429/5xx/resets retried honouring Retry-After).
 */
import type { ChatMessage, ChatRequest, ChatResponse, ToolCall } from '../providers.js';
import { callWithRetry, parseToolArguments, registerSecret } from './common.js';

export interface AnthropicSettings {
  /** Provider id used in errors (`providerC`). */
  provider: string;
  apiKey: string;
  /** Default https://api.anthropic.com. */
  baseUrl?: string;
  /** Default time one attempt may take. */
  timeoutMs?: number;
  retries?: number;
  /** First backoff in ms (tests make it small). */
  baseMs?: number;
  /** `max_tokens` when the request names none (the API requires one). Default 4096. */
  defaultMaxTokens?: number;
}

type Block = Record<string, unknown>;
interface VendorMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

/** Keel messages → `{ system, messages }` of the Messages API (consecutive turns of one role merged). */
export function toAnthropicMessages(messages: ChatMessage[]): { system?: string; messages: VendorMessage[] } {
  const system: string[] = [];
  const out: VendorMessage[] = [];
  const push = (role: VendorMessage['role'], blocks: Block[]) => {
    if (!blocks.length) return;
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    if (m.role === 'system') {
      if (m.content) system.push(m.content);
    } else if (m.role === 'user') {
      const blocks: Block[] = [];
      for (const img of m.images ?? []) {
        blocks.push({ type: 'image', source: { type: 'base64', media_type: img.mimeType, data: img.base64 } });
      }
      if (m.content) blocks.push({ type: 'text', text: m.content });
      push('user', blocks.length ? blocks : [{ type: 'text', text: ' ' }]);
    } else if (m.role === 'assistant') {
      const blocks: Block[] = [];
      if (m.content) blocks.push({ type: 'text', text: m.content });
      for (const c of m.toolCalls ?? []) blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: c.arguments ?? {} });
      push('assistant', blocks.length ? blocks : [{ type: 'text', text: ' ' }]);
    } else {
      push('user', [{ type: 'tool_result', tool_use_id: m.toolCallId ?? '', content: m.content || ' ' }]);
    }
  }
  return { ...(system.length ? { system: system.join('\n\n') } : {}), messages: out };
}

let sdk: Promise<typeof import('@anthropic-ai/sdk')> | undefined;

/** One chat turn through the Messages API. */
export async function anthropicChat(s: AnthropicSettings, req: ChatRequest): Promise<ChatResponse> {
  registerSecret(s.apiKey);
  const { default: Anthropic } = await (sdk ??= import('@anthropic-ai/sdk'));
  // authToken null: never pick up ANTHROPIC_AUTH_TOKEN from the process environment; the key is the configured one.
  const client = new Anthropic({
    apiKey: s.apiKey,
    authToken: null,
    baseURL: s.baseUrl || 'https://api.anthropic.com',
    maxRetries: 0,
  });
  const { system, messages } = toAnthropicMessages(req.messages);
  const body: Record<string, unknown> = {
    model: req.model,
    max_tokens: req.maxTokens ?? s.defaultMaxTokens ?? 4096,
    messages,
  };
  if (system) body.system = system;
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.tools?.length) {
    body.tools = req.tools.map((t) => ({
      name: t.name,
      description: t.description,
      input_schema: { type: 'object', ...t.parameters },
    }));
  }
  const timeoutMs = req.timeoutMs ?? s.timeoutMs;
  const msg = await callWithRetry(
    s.provider,
    (signal) =>
      client.messages.create(body as never, { signal, maxRetries: 0 }) as Promise<{
        content: Array<{ type: string; text?: string; id?: string; name?: string; input?: unknown }>;
        usage?: { input_tokens?: number; output_tokens?: number };
        model?: string;
        stop_reason?: string | null;
      }>,
    {
      ...(req.signal ? { signal: req.signal } : {}),
      ...(timeoutMs ? { timeoutMs } : {}),
      ...(s.retries !== undefined ? { retries: s.retries } : {}),
      ...(s.baseMs !== undefined ? { baseMs: s.baseMs } : {}),
      secrets: [s.apiKey],
    },
  );
  const text: string[] = [];
  const toolCalls: ToolCall[] = [];
  for (const b of msg.content ?? []) {
    if (b.type === 'text' && typeof b.text === 'string') text.push(b.text);
    else if (b.type === 'tool_use')
      toolCalls.push({ id: b.id ?? `call_${toolCalls.length}`, name: b.name ?? '', ...parseToolArguments(b.input) });
  }
  return {
    text: text.join(''),
    toolCalls,
    usage: { inputTokens: msg.usage?.input_tokens ?? 0, outputTokens: msg.usage?.output_tokens ?? 0 },
    model: msg.model ?? req.model,
    ...(msg.stop_reason ? { finishReason: msg.stop_reason } : {}),
  };
}
