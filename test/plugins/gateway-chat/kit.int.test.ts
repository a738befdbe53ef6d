/**
 * The gateway chat on the channel kit: what a killed process left in the channel's store goes out at the next start
 * (an answer ledgered but not delivered, a message recorded but not handled), a send is ledgered under its key
 * (delivered once, the same ids again), and an address that is no conversation id is refused. The real kernel with
 * the built-in agent on the scripted fake provider, the real gateway with a key, a real `ws` client and fetch.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { ChannelStore } from '../../../sdk/channel-kit/store.js';
import { installFakeProvider, type FakeProviderControl } from '../../../testing/index.js';
import { rm, tmp, waitFor } from '../../helpers.js';
import { type Client, keySocket, type Msg } from '../gateway/ws-helpers.js';

const KEY = 'chat-key-0123456789abcdef';
const LEFT_ACTION = 'act_1700000000000_crashed1';
let home: string;
let kernel: Kernel;
let fake: FakeProviderControl;
let base: string;
let port: number;

type History = { messages: Array<{ role: string; text: string; actionId?: string }> };
const history = async (id: string) => (await (await fetch(`${base}/api/chat/${id}`, { headers: { 'x-api-key': KEY } })).json()) as History;

beforeAll(async () => {
  home = tmp('keel-gwchat-kit-');
  fake = installFakeProvider(home);
  writeFileSync(join(home, 'keel.config.yaml'), 'llmProvider: fake\nmodelName: fake-model\n', { mode: 0o600 });
  // What a process killed mid-way left: the first answer of an action ledgered but not confirmed, and a message
  // recorded by the ingress but not handled yet.
  const store = ChannelStore.open(home, 'gateway-chat');
  store.db
    .prepare('INSERT INTO delivery(key, chunk, chat_id, body, created_at) VALUES (?, 0, ?, ?, ?)')
    .run(`${LEFT_ACTION}:r0`, 'conv-left', JSON.stringify({ text: 'The answer a crash left unsent.', actionId: LEFT_ACTION }), Date.now());
  store.db
    .prepare('INSERT INTO inbound(message_id, chat_id, payload, recorded_at) VALUES (?, ?, ?, ?)')
    .run(
      'm-recorded',
      'conv-recorded',
      JSON.stringify({ text: 'recorded before the crash', userId: 'operator', operator: true }),
      Date.now(),
    );
  store.close();
  fake.replies.push({ text: 'Answered after the restart.' });
  kernel = await startKernel({
    home,
    env: {},
    watchSkills: false,
    runAgent: true,
    runner: { maxIdleMs: 100 },
    overrides: { gatewayAutoStart: true, gatewayPort: 0, gatewayHost: '127.0.0.1', gatewayApiKey: KEY },
    logs: new LogSink({ quiet: true }),
  });
  port = kernel.registry.use<{ port: number }>('gateway:address')!.port;
  base = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  await kernel?.stop();
  if (home) rm(home);
});

const socket = (): Promise<Client> => keySocket(port, KEY);
const event = (name: string, pred: (d: { conversationId?: unknown }) => boolean) => (m: Msg) =>
  m.type === 'event' && m.event === name && pred(m.data);

describe('gateway chat on the channel kit', () => {
  it('delivers at start the answer a crash left unsent, and turns the message it left recorded into an action', async () => {
    const left = await waitFor(async () => {
      const h = await history('conv-left');
      return h.messages.length ? h : undefined;
    }, 'the resumed answer');
    expect(left.messages).toMatchObject([{ role: 'agent', text: 'The answer a crash left unsent.', actionId: LEFT_ACTION }]);

    const action = await waitFor(
      () => kernel.queue.list().completed.find((a) => a.source === 'gateway-chat' && a.metadata.replyTo?.chatId === 'conv-recorded'),
      'the action of the recorded message',
    );
    expect(action.metadata.actor).toMatchObject({ kind: 'operator', channel: 'gateway-chat' });
    const h = await waitFor(async () => {
      const r = await history('conv-recorded');
      return r.messages.length >= 2 ? r : undefined;
    }, 'its answer');
    expect(h.messages.map((m) => [m.role, m.text])).toEqual([
      ['user', 'recorded before the crash'],
      ['agent', 'Answered after the restart.'],
    ]);
    // Sent again with the same id: the ingress knows it.
    const again = await fetch(`${base}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': KEY },
      body: JSON.stringify({ text: 'recorded before the crash', conversationId: 'conv-recorded', messageId: 'm-recorded' }),
    });
    expect(await again.json()).toMatchObject({ status: 'ignored', reason: 'duplicate' });
  });

  it('ledgers a send under its key: delivered once, the same ids again; a bad conversation id is refused', async () => {
    const c = await socket();
    const cap = kernel.registry.use<{
      send(to: string, m: string, o?: { idempotencyKey?: string }): Promise<{ messageId: string; messageIds: string[] }>;
    }>('channel:gateway-chat')!;
    const first = await cap.send('conv-send', 'only once', { idempotencyKey: 'notify-1' });
    const second = await cap.send('conv-send', 'only once', { idempotencyKey: 'notify-1' });
    expect(second).toEqual(first);
    expect(first.messageIds).toEqual([first.messageId]);
    const reply = await c.next(
      event('chat.reply', (d) => d.conversationId === 'conv-send'),
      'the sent message',
    );
    expect(reply.data).toEqual({ conversationId: 'conv-send', messageId: first.messageId, text: 'only once' });
    await new Promise((r) => setTimeout(r, 200));
    expect(c.messages.filter(event('chat.reply', (d) => d.conversationId === 'conv-send'))).toHaveLength(0);
    expect((await history('conv-send')).messages).toHaveLength(1);

    await expect(cap.send('../etc', 'x')).rejects.toThrow(/not a gateway chat conversation id/);
    c.close();
  });
});
