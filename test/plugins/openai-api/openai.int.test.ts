/**
 * The OpenAI-compatible endpoint end to end: the real `openai` client library against the real gateway on
 * 127.0.0.1 (port 0, with a key), the real kernel running the built-in agent (skills, memory) on the scripted fake
 * model provider. What the client gets is what the agent answered; what the agent saw is the client's messages.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { installFakeProvider, type FakeProviderControl } from '../../../testing/index.js';
import { rm, tmp, waitFor } from '../../helpers.js';

const KEY = 'openai-key-0123456789abcdef';
let home: string;
let kernel: Kernel;
let fake: FakeProviderControl;
let base: string;
let client: OpenAI;

beforeAll(async () => {
  home = tmp('keel-openai-');
  fake = installFakeProvider(home);
  writeFileSync(join(home, 'keel.config.yaml'), 'llmProvider: fake\nmodelName: fake-model\n', { mode: 0o600 });
  kernel = await startKernel({
    home,
    env: {},
    watchSkills: false,
    runAgent: true,
    runner: { maxIdleMs: 100 },
    overrides: { gatewayAutoStart: true, gatewayPort: 0, gatewayHost: '127.0.0.1', gatewayApiKey: KEY },
    logs: new LogSink({ quiet: true }),
  });
  expect(kernel.host.status('openai-api')?.state).toBe('loaded');
  const port = kernel.registry.use<{ port: number }>('gateway:address')!.port;
  base = `http://127.0.0.1:${port}`;
  client = new OpenAI({ baseURL: `${base}/v1`, apiKey: KEY, maxRetries: 0 });
});
afterAll(async () => {
  await kernel?.stop();
  if (home) rm(home);
});

const lastPrompt = () =>
  fake.calls
    .at(-1)!
    .messages.map((m) => m.content)
    .join('\n');

describe('OpenAI-compatible endpoint (/v1)', () => {
  it('GET /v1/models lists the agent as "keel"; an unknown model is model_not_found', async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    expect(ids).toEqual(['keel']);
    expect((await client.models.retrieve('keel')).owned_by).toBe('keel');
    const e = await client.models.retrieve('gpt-4o').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(OpenAI.NotFoundError);
    expect((e as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');
  });

  it('a chat completion is the agent running with its skills: a skill call, then the answer, with the tokens used', async () => {
    fake.replies.push(
      {
        toolCalls: [{ name: 'update_journal', arguments: { entry_text: 'Talked about the harbour over the OpenAI API.' } }],
        usage: { inputTokens: 30, outputTokens: 7 },
      },
      { text: 'Noted in the journal.', usage: { inputTokens: 50, outputTokens: 5 } },
    );
    const r = await client.chat.completions.create({
      model: 'keel',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'My boat is called Petrel.' },
        { role: 'assistant', content: 'A fine name.' },
        { role: 'user', content: 'Write about the harbour in your journal.' },
      ],
    });
    expect(r.object).toBe('chat.completion');
    expect(r.model).toBe('keel');
    expect(r.choices).toHaveLength(1);
    expect(r.choices[0]!.message).toMatchObject({ role: 'assistant', content: 'Noted in the journal.' });
    expect(r.choices[0]!.finish_reason).toBe('stop');
    expect(r.usage).toEqual({ prompt_tokens: 80, completion_tokens: 12, total_tokens: 92 });
    // The skill really ran (the journal file), and the model saw its result.
    expect(readFileSync(join(home, 'JOURNAL.md'), 'utf8')).toContain('Talked about the harbour over the OpenAI API.');
    expect(fake.calls.at(-1)!.messages.some((m) => m.role === 'tool' && m.name === 'update_journal')).toBe(true);
    // The task is the last user message; the earlier turns and the client's system prompt come with it.
    const prompt = lastPrompt();
    expect(prompt).toContain('Write about the harbour in your journal.');
    expect(prompt).toContain('[user] My boat is called Petrel.');
    expect(prompt).toContain('[assistant] A fine name.');
    expect(prompt).toContain('Be brief.');
    // The action: channel openai-api, run as the operator, trusted.
    const id = r.id.replace(/^chatcmpl-/, '');
    const a = kernel.queue.get(id)!;
    expect(a.source).toBe('openai-api');
    expect(a.metadata.actor).toMatchObject({ kind: 'operator', channel: 'openai-api', userId: 'operator' });
    expect(a.metadata.untrusted).toBeUndefined();
    expect(a.task.split('\n')[0]).toBe('Write about the harbour in your journal.');
  });

  it('streams: a role delta, the reasoning of tool steps, the content, finish_reason stop, usage, [DONE]', async () => {
    fake.replies.push(
      {
        text: 'Let me look in memory.',
        toolCalls: [{ name: 'recall_memory', arguments: { query: 'harbour' } }],
        usage: { inputTokens: 10, outputTokens: 2 },
      },
      { text: 'The harbour is calm today.', usage: { inputTokens: 20, outputTokens: 6 } },
    );
    const stream = await client.chat.completions.create({
      model: 'keel',
      messages: [{ role: 'user', content: 'How is the harbour?' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const c of stream) chunks.push(c);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.model === 'keel')).toBe(true);
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    const content = chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
    expect(content).toBe('The harbour is calm today.');
    const reasoning = chunks
      .map((c) => (c.choices[0]?.delta as { reasoning_content?: string } | undefined)?.reasoning_content ?? '')
      .join('');
    expect(reasoning).toContain('Let me look in memory.');
    expect(chunks.filter((c) => c.choices[0]?.finish_reason === 'stop')).toHaveLength(1);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({ prompt_tokens: 30, completion_tokens: 8, total_tokens: 38 });
    expect(fake.calls.at(-1)!.messages.some((m) => m.role === 'tool' && m.name === 'recall_memory')).toBe(true);
  });

  it('the raw stream is server-sent events ending with data: [DONE]', async () => {
    fake.replies.push({ text: 'Plain stream.' });
    const r = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'keel', messages: [{ role: 'user', content: 'stream please' }], stream: true }),
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/event-stream');
    const text = await r.text();
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(text).toContain('"content":"Plain stream."');
  });

  it("the `user` field names the sender; the key holder is the operator, in the operator's memory session", async () => {
    fake.replies.push({ text: 'Hello Ann.' });
    const r = await client.chat.completions.create({ model: 'keel', user: 'ann', messages: [{ role: 'user', content: 'hi, I am Ann' }] });
    const a = kernel.queue.get(r.id.replace(/^chatcmpl-/, ''))!;
    expect(a.metadata.actor).toMatchObject({ kind: 'operator', channel: 'openai-api', userId: 'ann' });
    expect(a.metadata.session).toBe('operator');
    expect(lastPrompt()).toContain('sent by "ann"');
  });

  it('needs the key: without it the client raises AuthenticationError, and nothing is queued', async () => {
    const before = kernel.queue.list().completed.length + kernel.queue.list().pending.length;
    const anon = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'wrong-key', maxRetries: 0 });
    await expect(anon.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    await expect(anon.chat.completions.create({ model: 'keel', messages: [{ role: 'user', content: 'x' }] })).rejects.toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
    expect(kernel.queue.list().completed.length + kernel.queue.list().pending.length).toBe(before);
  });

  it('bad requests are 400 (404 for an unknown model) in OpenAI error shape, with a plain message, and queue nothing', async () => {
    const calls = fake.calls.length;
    const cases: Array<[unknown, number, string]> = [
      [{ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }, 404, 'does not exist'],
      [{ model: 'keel' }, 400, '"messages" is required'],
      [{ model: 'keel', messages: [{ role: 'assistant', content: 'only me' }] }, 400, 'no user message'],
      [{ model: 'keel', messages: [{ role: 'wizard', content: 'x' }] }, 400, 'role "wizard" is unknown'],
      [
        { model: 'keel', messages: [{ role: 'user', content: 'x' }], tools: [{ type: 'function', function: { name: 'f' } }] },
        400,
        'not supported',
      ],
      [
        { model: 'keel', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://x/y.png' } }] }] },
        400,
        'text only',
      ],
      [{ model: 'keel', messages: [{ role: 'user', content: 'x' }], n: 2 }, 400, '"n" must be 1'],
      [{ model: 'keel', messages: [{ role: 'user', content: 'x' }], user: 'has spaces' }, 400, '"user" must be'],
    ];
    for (const [body, status, message] of cases) {
      const e = await client.chat.completions.create(body as never).catch((x: unknown) => x);
      expect(e, JSON.stringify(body)).toBeInstanceOf(OpenAI.APIError);
      const err = e as InstanceType<typeof OpenAI.APIError>;
      expect(err.status, JSON.stringify(body)).toBe(status);
      expect(err.message, JSON.stringify(body)).toContain(message);
      expect(err.type).toBe(status === 404 ? 'not_found_error' : 'invalid_request_error');
    }
    expect(fake.calls.length).toBe(calls);
  });

  it('an agent failure is an APIError with the reason, not a hang', async () => {
    fake.defaultReply = { error: { message: 'model exploded', retryable: false } };
    try {
      const e = await client.chat.completions
        .create({ model: 'keel', messages: [{ role: 'user', content: 'fail please' }] }, { timeout: 60_000 })
        .catch((x: unknown) => x);
      expect(e).toBeInstanceOf(OpenAI.APIError);
      expect((e as Error).message).toContain('model exploded');
    } finally {
      delete fake.defaultReply;
    }
  }, 60_000);

  it('a client that goes away cancels its action', async () => {
    let started = false;
    fake.replies.push({ text: 'too late', delayMs: 30_000 });
    const original = fake.replies[0]!;
    fake.replies[0] = (req) => {
      started = true;
      return typeof original === 'function' ? original(req) : original;
    };
    const ac = new AbortController();
    const pending = client.chat.completions
      .create({ model: 'keel', messages: [{ role: 'user', content: 'take your time' }], stream: true }, { signal: ac.signal })
      .then(async (s) => {
        for await (const _ of s) {
          /* read until aborted */
        }
      })
      .catch(() => undefined);
    await waitFor(() => started, 'the agent to start');
    const all = () => {
      const l = kernel.queue.list();
      return [...l.pending, ...l.completed, ...l.failed];
    };
    const id = (await waitFor(() => all().find((a) => a.task === 'take your time'), 'the action')).id;
    expect(kernel.queue.get(id)!.status).toBe('executing');
    ac.abort();
    await pending;
    await waitFor(() => kernel.queue.get(id)?.status === 'failed', 'the action to be cancelled');
    expect(kernel.queue.get(id)!.error).toContain('disconnected');
    expect(fake.replies.length).toBe(0);
  }, 30_000);

  it('a bounded wait: past openaiApiTimeoutSeconds the answer is 504 timeout and the action is cancelled', async () => {
    const put = (value: number) =>
      fetch(`${base}/api/config/openaiApiTimeoutSeconds`, {
        method: 'PUT',
        headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ value }),
      });
    expect((await put(1)).status).toBe(200);
    try {
      fake.replies.push({ text: 'much too late', delayMs: 20_000 });
      const e = await client.chat.completions
        .create({ model: 'keel', messages: [{ role: 'user', content: 'slow one' }] })
        .catch((x: unknown) => x);
      expect(e).toBeInstanceOf(OpenAI.APIError);
      const err = e as InstanceType<typeof OpenAI.APIError>;
      expect(err.status).toBe(504);
      expect(err.code).toBe('timeout');
      expect(err.message).toContain('did not answer within 1 seconds');
      const l = kernel.queue.list();
      const id = [...l.pending, ...l.completed, ...l.failed].find((a) => a.task === 'slow one')!.id;
      await waitFor(() => kernel.queue.get(id)?.status === 'failed', 'the action to be cancelled');
      expect(kernel.queue.get(id)!.error).toContain('openaiApiTimeoutSeconds');
    } finally {
      await put(600);
    }
  });

  it('an Idempotency-Key makes a retry wait for the same action instead of running it again', async () => {
    fake.replies.push({ text: 'Once only.' });
    const opts = { headers: { 'Idempotency-Key': 'retry-key-1' } };
    const body = { model: 'keel', messages: [{ role: 'user' as const, content: 'do it once' }] };
    const first = await client.chat.completions.create(body, opts);
    const calls = fake.calls.length;
    const again = await client.chat.completions.create(body, opts);
    expect(again.id).toBe(first.id);
    expect(again.choices[0]!.message.content).toBe('Once only.');
    expect(fake.calls.length).toBe(calls);
  });
});

describe('OpenAI-compatible endpoint without an agent running', () => {
  it('answers 503 agent_not_running at once and queues nothing', async () => {
    const h = tmp('keel-openai-noagent-');
    const k = await startKernel({
      home: h,
      env: {},
      watchSkills: false,
      runAgent: false,
      overrides: { gatewayAutoStart: true, gatewayPort: 0, gatewayHost: '127.0.0.1', gatewayApiKey: KEY },
      logs: new LogSink({ quiet: true }),
    });
    try {
      const port = k.registry.use<{ port: number }>('gateway:address')!.port;
      const c = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: KEY, maxRetries: 0 });
      const e = await c.chat.completions
        .create({ model: 'keel', messages: [{ role: 'user', content: 'anyone?' }] })
        .catch((x: unknown) => x);
      expect(e).toBeInstanceOf(OpenAI.APIError);
      expect((e as InstanceType<typeof OpenAI.APIError>).status).toBe(503);
      expect((e as InstanceType<typeof OpenAI.APIError>).code).toBe('agent_not_running');
      expect(k.queue.list().pending).toEqual([]);
    } finally {
      await k.stop();
      rm(h);
    }
  });
});
