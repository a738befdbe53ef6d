/**
 * The gateway chat end to end: the real kernel running the built-in agent on the scripted fake provider, the real
 * gateway on 127.0.0.1 port 0 with a key, a real `ws` client and fetch. A message goes in over REST and over the
 * WebSocket action `chat`, through receive(), becomes an action of channel gateway-chat, and its reply comes back
 * as a chat.reply event for that conversation.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { installFakeProvider, type FakeProviderControl } from '../../../testing/index.js';
import { rm, tmp, waitFor } from '../../helpers.js';
import { type Client, keySocket, type Msg } from '../gateway/ws-helpers.js';

const KEY = 'chat-key-0123456789abcdef';
let home: string;
let kernel: Kernel;
let fake: FakeProviderControl;
let base: string;
let port: number;

beforeAll(async () => {
  home = tmp('keel-gwchat-');
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
  expect(kernel.host.status('gateway-chat')?.state).toBe('loaded');
  port = kernel.registry.use<{ port: number }>('gateway:address')!.port;
  base = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  await kernel?.stop();
  if (home) rm(home);
});

const socket = (): Promise<Client> => keySocket(port, KEY);

const post = (body: unknown, key: string | null = KEY) =>
  fetch(`${base}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'x-api-key': key } : {}) },
    body: JSON.stringify(body),
  });

const event = (name: string, pred: (d: any) => boolean) => (m: Msg) => m.type === 'event' && m.event === name && pred(m.data);

describe('gateway chat', () => {
  it('over the WebSocket: chat -> action of channel gateway-chat (operator) -> chat.reply on the same conversation', async () => {
    const c = await socket();
    fake.replies.push({ text: 'Hello, operator.' });
    const r = await c.request('chat', { text: 'hi there', conversationId: 'conv-ws' });
    expect(r).toMatchObject({ ok: true, result: { conversationId: 'conv-ws', status: 'queued' } });
    const actionId = r.result.actionId as string;
    const reply = await c.next(
      event('chat.reply', (d) => d.conversationId === 'conv-ws'),
      'the chat reply',
    );
    expect(reply.data).toMatchObject({ conversationId: 'conv-ws', actionId, text: 'Hello, operator.' });
    expect(typeof reply.seq).toBe('number');
    // The agent's own events for this conversation's action arrive on the same stream.
    await c.next(
      event('action.completed', (d) => d.actionId === actionId),
      'the action completion',
    );
    expect(c.messages.some(event('chat.message', (d) => d.actionId === actionId && d.text === 'hi there'))).toBe(true);
    const a = kernel.queue.get(actionId)!;
    expect(a.source).toBe('gateway-chat');
    expect(a.metadata.replyTo).toMatchObject({ chatId: 'conv-ws' });
    expect(a.metadata.actor).toMatchObject({ kind: 'operator', channel: 'gateway-chat' });
    expect(a.metadata.untrusted).toBeUndefined();
    // What the model saw: the user's text.
    expect(fake.calls.at(-1)!.messages.at(-1)!.content).toContain('hi there');
    c.close();
  });

  it('over REST: POST /api/chat is 202 with the action; the reply comes back on the WebSocket; history keeps both', async () => {
    const c = await socket();
    fake.replies.push({ text: 'Answer over REST.' });
    const res = await post({ text: 'rest question', conversationId: 'conv-rest', messageId: 'client-1' });
    expect(res.status).toBe(202);
    const out = (await res.json()) as { conversationId: string; actionId: string; status: string; messageId: string };
    expect(out).toMatchObject({ conversationId: 'conv-rest', status: 'queued', messageId: 'client-1' });
    const reply = await c.next(
      event('chat.reply', (d) => d.conversationId === 'conv-rest'),
      'the REST chat reply',
    );
    expect(reply.data.text).toBe('Answer over REST.');
    expect(reply.data.actionId).toBe(out.actionId);

    // The same client message id again: nothing new is queued.
    const again = await post({ text: 'rest question', conversationId: 'conv-rest', messageId: 'client-1' });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ status: 'ignored', reason: 'duplicate' });

    const hist = (await (await fetch(`${base}/api/chat/conv-rest`, { headers: { 'x-api-key': KEY } })).json()) as {
      messages: Array<{ role: string; text: string }>;
    };
    expect(hist.messages.map((m) => [m.role, m.text])).toEqual([
      ['user', 'rest question'],
      ['agent', 'Answer over REST.'],
    ]);
    c.close();
  });

  it('messageOut taps apply: a redacting tap changes what the conversation gets, a dropping tap sends nothing', async () => {
    const c = await socket();
    kernel.hooks.messageOut.tapPromise('test-redact', async (m) =>
      m.channel === 'gateway-chat' ? { ...m, text: m.text.replace(/sk-[a-z0-9]+/g, '[redacted]') } : m,
    );
    fake.replies.push({ text: 'Your key is sk-abc123, keep it safe.' });
    await post({ text: 'what is my key', conversationId: 'conv-redact' });
    const reply = await c.next(
      event('chat.reply', (d) => d.conversationId === 'conv-redact'),
      'the redacted reply',
    );
    expect(reply.data.text).toBe('Your key is [redacted], keep it safe.');
    const hist = (await (await fetch(`${base}/api/chat/conv-redact`, { headers: { 'x-api-key': KEY } })).json()) as {
      messages: Array<{ role: string; text: string }>;
    };
    expect(JSON.stringify(hist)).not.toContain('sk-abc123');
    const cap = kernel.registry.use<{ send(to: string, m: string): Promise<unknown> }>('channel:gateway-chat')!;
    kernel.hooks.messageOut.tapPromise('test-drop', async (m) => (m.text.includes('drop this') ? (null as never) : m));
    await expect(cap.send('conv-redact', 'drop this')).rejects.toThrow('A messageOut hook dropped the message.');
    c.close();
  });

  it('an action that fails answers its conversation once with chat.error, briefly, and a removed one says so', async () => {
    const c = await socket();
    // Every attempt fails (the first and the kernel's three retries, 1 s + 2 s + 4 s apart).
    fake.defaultReply = { error: { message: 'model exploded\n    at internal stack line', retryable: false } };
    try {
      const r = await c.request('chat', { text: 'this will fail', conversationId: 'conv-fail' });
      const actionId = r.result.actionId as string;
      const err = await c.next(
        event('chat.error', (d) => d.conversationId === 'conv-fail'),
        'the chat error',
        30_000,
      );
      expect(err.data.actionId).toBe(actionId);
      expect(err.data.message).toMatch(/^Sorry, this failed: .*model exploded/);
      expect(err.data.message).not.toMatch(/stack line/);
      expect(kernel.queue.get(actionId)?.status).toBe('failed');

      // A message removed while it waits for a retry is answered once too.
      const r2 = await c.request('chat', { text: 'this will be removed', conversationId: 'conv-removed' });
      const id2 = r2.result.actionId as string;
      await c.next(
        event('action.retry', (d) => d.actionId === id2),
        'the first retry',
      );
      await kernel.cancel(id2, 'removed by the operator');
      const removed = await c.next(
        event('chat.error', (d) => d.conversationId === 'conv-removed'),
        'the removal notice',
      );
      expect(removed.data).toMatchObject({ actionId: id2, message: 'This message was cancelled.' });
    } finally {
      delete fake.defaultReply;
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(c.messages.filter((m) => m.type === 'event' && (m.event === 'chat.error' || m.event === 'chat.reply'))).toHaveLength(0);
    c.close();
  }, 40_000);

  it('needs the gateway key (401), and refuses bad input with 400 without queueing anything', async () => {
    const before = kernel.queue.list().pending.length + kernel.queue.list().completed.length;
    expect((await post({ text: 'no key' }, null)).status).toBe(401);
    expect((await post({ text: 'wrong key' }, 'nope')).status).toBe(401);
    const bad = await post({ text: '' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toMatch(/text/);
    expect((await post({ text: 'x', conversationId: '../etc' })).status).toBe(400);
    expect((await post({ text: 'x', extra: 1 })).status).toBe(400);
    const c = await socket();
    const wsBad = await c.request('chat', { conversationId: 'c' });
    expect(wsBad).toMatchObject({ ok: false, error: { code: 'KEEL_E_INVALID_INPUT' } });
    expect(wsBad.error.message).toMatch(/text/);
    c.close();
    expect(kernel.queue.list().pending.length + kernel.queue.list().completed.length).toBe(before);
  });

  it('is listed as a connection and documented in the OpenAPI document', async () => {
    const conns = (await (await fetch(`${base}/api/connections`, { headers: { 'x-api-key': KEY } })).json()) as Record<string, unknown>;
    expect(conns['gateway-chat']).toMatchObject({ enabled: true, connected: true });
    const doc = (await (await fetch(`${base}/api/openapi.json`, { headers: { 'x-api-key': KEY } })).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    expect(Object.keys(doc.paths['/api/chat']!)).toEqual(['post']);
    expect(Object.keys(doc.paths['/api/chat/{conversationId}']!)).toEqual(['get']);
    await waitFor(() => true, 'nothing');
  });
});
