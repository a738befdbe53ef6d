/**
 * examples/plugins/echo-channel, loaded as a user plugin from $KEEL_HOME/plugins (it imports only `keel/sdk` and
 * `keel/sdk/channel-kit`, on which it is an adapter that `defineChannel` runs):
 * a message posted to its loopback "platform" becomes an action through `receive`, the agent (scripted fake
 * provider) answers, and the answer comes back on the same chat through the channel's `reply`. The channel
 * appears in GET /api/connections and in system_check like a built-in one, and adminUsers.echo is checked
 * against the form its manifest declares.
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChannelCapability } from '../../sdk/index.js';
import { bootKernel, installFakeProvider, type FakeProviderControl, type TestKernel } from '../../testing/index.js';
import { waitFor } from '../helpers.js';

const EXAMPLE = join(import.meta.dirname, '..', '..', 'examples', 'plugins', 'echo-channel');
const open: TestKernel[] = [];
afterEach(async () => {
  for (const t of open.splice(0)) await t.close();
});

async function boot(home?: string): Promise<{ t: TestKernel; fake: FakeProviderControl; echo: string; gateway: string }> {
  let fake!: FakeProviderControl;
  const t = await bootKernel({
    ...(home ? { home } : {}),
    builtins: ['agent', 'gateway', 'doctor'],
    runAgent: true,
    before: (home) => {
      cpSync(EXAMPLE, join(home, 'plugins', 'echo-channel'), { recursive: true });
      fake = installFakeProvider(home);
    },
    config: {
      llmProvider: 'fake',
      modelName: 'fake-model',
      echoChannelPort: 0,
      gatewayAutoStart: true,
      gatewayPort: 0,
      gatewayHost: '127.0.0.1',
    },
  });
  open.push(t);
  expect(t.kernel.host.status('echo-channel')).toMatchObject({ state: 'loaded', origin: 'user', kind: 'channel' });
  const channel = t.kernel.registry.use<ChannelCapability & { url: string }>('channel:echo');
  const gw = t.kernel.registry.use<{ port: number }>('gateway:address');
  if (!channel || !gw) throw new Error('echo channel or gateway not running');
  return { t, fake, echo: channel.url, gateway: `http://127.0.0.1:${gw.port}` };
}

const post = (url: string, body: unknown, method = 'POST') =>
  fetch(url, { method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

describe('the echo channel example (a user channel plugin on the public SDK)', () => {
  it('turns a posted message into an action and brings the agent answer back to the same chat', async () => {
    const { t, fake, echo } = await boot();
    fake.replies.push({ text: 'Hello Alice, you said: hello keel' });
    const res = await post(`${echo}/messages`, { chatId: 'room-1', userId: 'alice', text: 'hello keel', messageId: 'p-1' });
    expect(res.status).toBe(202);
    const { actionId } = (await res.json()) as { actionId: string };
    const action = t.kernel.queue.get(actionId)!;
    expect(action).toMatchObject({
      source: 'echo',
      task: 'hello keel',
      metadata: {
        replyTo: { chatId: 'room-1', messageId: 'p-1' },
        actor: { kind: 'user', channel: 'echo', userId: 'alice', untrusted: true },
      },
    });

    const messages = await waitFor(async () => {
      const body = (await (await fetch(`${echo}/messages?chatId=room-1`)).json()) as {
        messages: Array<{ text: string; replyToMessageId?: string }>;
      };
      return body.messages.length > 0 ? body.messages : undefined;
    }, 'the answer on room-1');
    expect(messages).toEqual([
      { messageId: 'echo-1', chatId: 'room-1', text: 'Hello Alice, you said: hello keel', replyToMessageId: 'p-1' },
    ]);
    expect(fake.calls[0]!.messages.at(-1)!.content).toContain('hello keel');
    await waitFor(() => t.kernel.queue.get(actionId)?.status === 'completed', 'the action to complete');

    // /echo is answered by the plugin itself through send, without an action.
    const echoed = await post(`${echo}/messages`, { chatId: 'room-2', userId: 'bob', text: '/echo ping' });
    expect(await echoed.json()).toEqual({ outcome: 'echoed', messageId: 'echo-2' });
    expect(((await (await fetch(`${echo}/messages?chatId=room-2`)).json()) as { messages: unknown[] }).messages).toEqual([
      { messageId: 'echo-2', chatId: 'room-2', text: 'ping', replyToMessageId: 'in-2' },
    ]);
    expect(t.kernel.queue.counts().completed).toBe(1);
    expect(fake.calls).toHaveLength(1);
  });

  it('on the kit (defineChannel): a message posted again is one action, also after a restart; /status is answered by the kit', async () => {
    const home = mkdtempSync(join(tmpdir(), 'keel-echo-'));
    try {
      const first = await boot(home);
      first.fake.replies.push({ text: 'once' });
      const body = { chatId: 'room-9', userId: 'alice', text: 'do it once', messageId: 'p-9' };
      const res = await post(`${first.echo}/messages`, body);
      expect(res.status).toBe(202);
      const { actionId } = (await res.json()) as { actionId: string };
      expect(await (await post(`${first.echo}/messages`, body)).json()).toEqual({ outcome: 'ignored', reason: 'duplicate' });
      await waitFor(() => first.t.kernel.queue.get(actionId)?.status === 'completed', 'the action to complete');
      // A built-in command: answered by the kit's runtime on the same chat, without the agent.
      await post(`${first.echo}/messages`, { chatId: 'room-9', userId: 'alice', text: '/status', messageId: 'p-10' });
      const status = await waitFor(async () => {
        const got = (await (await fetch(`${first.echo}/messages?chatId=room-9`)).json()) as { messages: Array<{ text: string }> };
        return got.messages.find((m) => /queue/i.test(m.text));
      }, 'the /status answer');
      expect(status.text).toMatch(/queue/i);
      expect(first.fake.calls).toHaveLength(1);
      await first.t.close();
      open.splice(open.indexOf(first.t), 1);

      // Restarted on the same home: the message recorded before is still known.
      const second = await boot(home);
      expect(await (await post(`${second.echo}/messages`, body)).json()).toEqual({ outcome: 'ignored', reason: 'duplicate' });
      expect(second.fake.calls).toHaveLength(0);
    } finally {
      for (const t of open.splice(0)) await t.close();
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('is listed by GET /api/connections and system_check, and its user-id form guards adminUsers.echo', async () => {
    const { t, echo, gateway } = await boot();
    const connections = (await (await fetch(`${gateway}/api/connections`)).json()) as Record<string, unknown>;
    expect(connections).toEqual({ echo: { enabled: true, connected: true, state: 'connected' } });
    await post(`${echo}/messages`, { chatId: 'room-1', userId: 'alice', text: 'hi' });
    const after = (await (await fetch(`${gateway}/api/connections`)).json()) as Record<string, { lastInboundAt?: string }>;
    expect(after.echo!.lastInboundAt).toMatch(/^\d{4}-\d\d-\d\dT/);

    const check = await t.kernel.execute('system_check', {}, t.kernel.operator);
    expect(check.result).toContain('Channel echo is connected');

    const bad = await post(`${gateway}/api/security`, { adminUsers: { echo: ['Alice Smith'] } }, 'PUT');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { message: string }).message).toMatch(/adminUsers\.echo: "Alice Smith" is not a echo user id .*"alice"/);
    expect(t.kernel.config.get('adminUsers')).toBeUndefined();
    const unknown = await post(`${gateway}/api/security`, { adminUsers: ['chatZ:1'] }, 'PUT');
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { message: string }).message).toMatch(/unknown channel "chatZ".*echo/);
    const good = await post(`${gateway}/api/security`, { adminUsers: { echo: ['alice'] } }, 'PUT');
    expect(good.status).toBe(200);

    // Now alice is admin on echo: her message is no longer marked untrusted.
    const res = await post(`${echo}/messages`, { chatId: 'room-1', userId: 'alice', text: 'as admin' });
    const { actionId } = (await res.json()) as { actionId: string };
    expect(t.kernel.queue.get(actionId)!.metadata.actor).toEqual({ kind: 'user', channel: 'echo', userId: 'alice' });
  });
});
