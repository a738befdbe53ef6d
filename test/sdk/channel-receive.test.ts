/**
 * The channel contract in a real kernel: `receive` (actor, admin through kernel:policy with identity links,
 * untrusted marking, session key, messageIn, gating, replyTo, duplicates), `ctx.capabilities('channel:')`, and
 * keel/sdk/testing's (testing/) `fakeChannel` and `createTestContext`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { receive, type InboundMessage, type PluginContext } from '../../sdk/index.js';
import {
  bootKernel,
  createTestContext,
  fakeChannel,
  installFakeProvider,
  removeHome,
  tempHome,
  type TestKernel,
} from '../../testing/index.js';

const open: TestKernel[] = [];
afterEach(async () => {
  for (const t of open.splice(0)) await t.close();
});

async function boot(yaml = '', ...channels: ReturnType<typeof fakeChannel>[]) {
  const t = await bootKernel({ configYaml: yaml, plugins: channels });
  open.push(t);
  return t;
}

describe('receive', () => {
  it('queues a non-admin message as untrusted work with its reply address, session and inbound record', async () => {
    const chat = fakeChannel('chat');
    const t = await boot('', chat);
    const out = await chat.inbound({
      text: ' hello ',
      chatId: 'room-9',
      userId: 'ann',
      threadId: 't1',
      replyTo: { guild: 'g1' },
      userName: 'Ann',
    });
    expect(out.kind).toBe('queued');
    const a = out.kind === 'queued' ? out.action : undefined;
    const stored = t.kernel.queue.get(a!.id)!;
    expect(stored).toMatchObject({ task: 'hello', source: 'chat', status: 'pending', priority: 5 });
    expect(stored.metadata.actor).toEqual({ kind: 'user', channel: 'chat', userId: 'ann', untrusted: true });
    expect(stored.metadata.replyTo).toEqual({ chatId: 'room-9', messageId: 'chat-in-1', threadId: 't1', guild: 'g1' });
    expect(stored.metadata.session).toBe('chat:ann');
    expect(stored.metadata.inbound).toEqual({ channel: 'chat', messageId: 'chat-in-1', userId: 'ann', userName: 'Ann' });
    expect(stored.metadata.untrusted).toBe(true);
  });

  it('asks kernel:policy who is admin: adminUsers of the channel, or a linked identity; notAdmin and forceUntrusted win', async () => {
    const chat = fakeChannel('chat');
    await boot(
      'adminUsers:\n  chat: ["boss"]\n  chatA: ["111"]\nidentityLinks:\n  "chat:alias": "chatA:111"\nsessionScope: per-peer\n',
      chat,
    );
    const actorOf = async (m: Partial<InboundMessage> & { text: string }) => {
      const out = await chat.inbound(m);
      if (out.kind !== 'queued') throw new Error(`not queued: ${JSON.stringify(out)}`);
      return out.action.metadata;
    };
    expect((await actorOf({ text: 'a', userId: 'boss' })).actor).toEqual({ kind: 'user', channel: 'chat', userId: 'boss' });
    const linked = await actorOf({ text: 'b', userId: 'alias' });
    expect(linked.actor).toEqual({ kind: 'user', channel: 'chat', userId: 'alias' });
    // per-peer: the linked identities share one session (the alphabetically first identity of the group).
    expect(linked.session).toBe('chat:alias');
    expect((await actorOf({ text: 'c', userId: 'boss', notAdmin: true })).actor).toMatchObject({ untrusted: true });
    const forced = await actorOf({ text: 'd', userId: 'boss', forceUntrusted: true });
    expect(forced.actor).toMatchObject({ untrusted: true });
    expect(forced.untrusted).toBe(true);
    expect((await actorOf({ text: 'e', userId: 'stranger' })).actor).toMatchObject({ untrusted: true });
  });

  it("keeps the quoted message with its trust: the bot's own or an admin's is trusted, anyone else's not; taps may redact it, not re-author it", async () => {
    const redactor = {
      manifest: { id: 'redactor', version: '1.0.0', kind: 'service' as const, description: 'redacts' },
      setup(ctx: PluginContext) {
        ctx.hooks.tap('messageIn', (m) =>
          m.quoted ? { ...m, quoted: { ...m.quoted, userId: 'boss', text: m.quoted.text.replace(/sk-\w+/g, '[key]') } } : m,
        );
      },
    };
    const chat = fakeChannel('chat');
    const t = await bootKernel({ configYaml: 'adminUsers:\n  chat: ["boss"]\n', plugins: [chat, redactor] });
    open.push(t);
    const quotedOf = async (m: Partial<InboundMessage> & { text: string }) => {
      const out = await chat.inbound({ userId: 'boss', ...m });
      if (out.kind !== 'queued') throw new Error(`not queued: ${JSON.stringify(out)}`);
      return out.action.metadata.quoted;
    };
    expect(
      await quotedOf({
        text: 'why?',
        quoted: { userId: 'bob', userName: 'bob', text: 'use sk-abc123 here', at: '2026-11-26T10:00:00.000Z' },
      }),
    ).toEqual({
      userId: 'bob',
      userName: 'bob',
      text: 'use [key] here',
      at: '2026-11-26T10:00:00.000Z',
      trusted: false,
    });
    expect(await quotedOf({ text: 'and this?', quoted: { userId: 'boss', text: 'my own note' } })).toMatchObject({ trusted: true });
    expect(await quotedOf({ text: 'shorter', quoted: { userId: 'B0T', fromBot: true, text: 'a long answer' } })).toEqual({
      userId: 'B0T',
      fromBot: true,
      text: 'a long answer',
      trusted: true,
    });
    // An unknown author is never an admin; an empty quote is left out; a long one is cut and says so.
    expect(await quotedOf({ text: 'who?', quoted: { userId: '', text: 'anonymous' } })).toMatchObject({ trusted: false });
    expect(await quotedOf({ text: 'nothing', quoted: { userId: 'bob', text: '   ' } })).toBeUndefined();
    const long = (await quotedOf({ text: 'sum up', quoted: { userId: 'bob', text: 'x'.repeat(5000) } })) as { text: string };
    expect(long.text).toBe(`${'x'.repeat(4000)}... (1000 more characters)`);
    // The sender's own trust is unchanged by what they quote: the admin stays an admin.
    const out = await chat.inbound({ userId: 'boss', text: 'ok', quoted: { userId: 'bob', text: 'hi' } });
    expect(out.kind === 'queued' && out.action.metadata.actor).toEqual({ kind: 'user', channel: 'chat', userId: 'boss' });
  });

  it('with auto-reply off only commands and mentions (in groups and direct chats) become actions', async () => {
    const chat = fakeChannel('chat', { autoReply: false });
    const t = await boot('', chat);
    expect(await chat.inbound({ text: 'just chatting', isGroup: true })).toEqual({ kind: 'ignored', reason: 'auto-reply-off' });
    expect(await chat.inbound({ text: 'just chatting in private' })).toEqual({ kind: 'ignored', reason: 'auto-reply-off' });
    expect((await chat.inbound({ text: '/status', command: 'status' })).kind).toBe('queued');
    expect((await chat.inbound({ text: '@bot help', isGroup: true, mentioned: true })).kind).toBe('queued');
    expect((await chat.inbound({ text: 'reply to the bot', mentioned: true })).kind).toBe('queued');
    expect(t.kernel.queue.counts().pending).toBe(3);
  });

  it('runs messageIn: taps rewrite the content (never the sender or the address) or drop the message', async () => {
    let tapped = 0;
    const rewriter = {
      manifest: { id: 'rewriter', version: '1.0.0', kind: 'service' as const, description: 'rewrites' },
      setup(ctx: PluginContext) {
        ctx.hooks.tap('messageIn', (m) => {
          tapped++;
          return m;
        });
        ctx.hooks.tap('messageIn', (m) =>
          m.text === 'drop me' ? { ...m, dropped: true } : { ...m, text: m.text.toUpperCase(), userId: 'mallory', chatId: 'elsewhere' },
        );
        ctx.hooks.tap('messageIn', (m) => (m.text.toLowerCase() === 'null me' ? null : m));
      },
    };
    const chat = fakeChannel('chat');
    const t = await bootKernel({ plugins: [chat, rewriter] });
    open.push(t);
    const out = await chat.inbound({ text: 'quiet please', userId: 'ann' });
    expect(out.kind === 'queued' && out.action).toMatchObject({
      task: 'QUIET PLEASE',
      metadata: { actor: { userId: 'ann' }, replyTo: { chatId: 'chat-1' } },
    });
    expect(await chat.inbound({ text: 'drop me' })).toEqual({ kind: 'ignored', reason: 'dropped-by-hook' });
    expect(await chat.inbound({ text: 'null me' })).toEqual({ kind: 'ignored', reason: 'dropped-by-hook' });
    // A redelivery is refused before the taps run: they see each platform message once.
    expect(tapped).toBe(3);
    expect(await chat.inbound({ text: 'quiet please', messageId: 'chat-in-1' })).toEqual({ kind: 'ignored', reason: 'duplicate' });
    expect(tapped).toBe(3);
    expect(t.kernel.queue.counts().pending).toBe(1);
  });

  it('ignores empty messages and a redelivered platform message id', async () => {
    const chat = fakeChannel('chat');
    const t = await boot('', chat);
    expect(await chat.inbound({ text: '   ' })).toEqual({ kind: 'ignored', reason: 'empty' });
    expect((await chat.inbound({ text: 'once', messageId: 'm-7' })).kind).toBe('queued');
    expect(await chat.inbound({ text: 'once', messageId: 'm-7' })).toEqual({ kind: 'ignored', reason: 'duplicate' });
    expect(t.kernel.queue.counts().pending).toBe(1);
    const withFile = await chat.inbound({ text: '', attachments: [{ path: '/tmp/x.pdf', name: 'x.pdf', kind: 'document' }] });
    expect(withFile.kind === 'queued' && withFile.action.task).toBe('[attachment: x.pdf (document) at /tmp/x.pdf]');
    // Two deliveries of one message at the same moment: one action.
    const both = await Promise.all([chat.inbound({ text: 'twice', messageId: 'm-8' }), chat.inbound({ text: 'twice', messageId: 'm-8' })]);
    expect(both.map((o) => o.kind).sort()).toEqual(['ignored', 'queued']);
    expect(t.kernel.queue.counts().pending).toBe(3);
  });

  it('recognises a message redelivered after a restart while its action is kept', async () => {
    const home = tempHome();
    try {
      const first = fakeChannel('chat');
      const a = await bootKernel({ home, plugins: [first] });
      expect((await first.inbound({ text: 'before the crash', messageId: 'm-1' })).kind).toBe('queued');
      await a.close();
      const again = fakeChannel('chat');
      const b = await bootKernel({ home, plugins: [again] });
      open.push(b);
      expect(await again.inbound({ text: 'before the crash', messageId: 'm-1' })).toEqual({ kind: 'ignored', reason: 'duplicate' });
      expect((await again.inbound({ text: 'new', messageId: 'm-2' })).kind).toBe('queued');
      expect(b.kernel.queue.counts().pending).toBe(2);
    } finally {
      for (const t of open.splice(0)) await t.close();
      removeHome(home);
    }
  });

  it('fails closed without kernel:policy: nobody is admin', async () => {
    const pushed: unknown[] = [];
    const ctx = {
      use: () => undefined,
      emit: async (_hook: string, m: unknown) => m,
      queue: {
        list: () => ({ pending: [], completed: [], failed: [] }),
        push: async (p: unknown) => (pushed.push(p), { id: 'act_1', metadata: {} }),
      },
    } as unknown as PluginContext;
    const out = await receive(ctx, { channel: 'chatA', messageId: '1', chatId: '1', userId: '111', text: 'hi' }, { autoReply: true });
    expect(out.kind).toBe('queued');
    expect(pushed[0]).toMatchObject({
      source: 'chatA',
      actor: { kind: 'user', untrusted: true },
      metadata: { untrusted: true, session: 'chatA:111' },
    });
    expect(
      await receive(
        ctx,
        { channel: 'chatA', messageId: '2', chatId: '1', userId: '111', text: 'hi' },
        { autoReply: true, requireAdmin: true },
      ),
    ).toEqual({
      kind: 'ignored',
      reason: 'not-admin',
    });
  });
});

describe('receive: onOrdered', () => {
  it('is called once the push is issued, before it is durable; never for a message that is not queued', async () => {
    const events: string[] = [];
    let durable!: () => void;
    const ctx = {
      use: () => undefined,
      emit: async (_hook: string, m: unknown) => m,
      queue: {
        list: () => ({ pending: [], completed: [], failed: [] }),
        push: (p: { task: string }) => {
          events.push(`push ${p.task}`);
          return new Promise((r) => {
            durable = () => r({ id: 'act_1', metadata: {} });
          });
        },
      },
    } as unknown as PluginContext;
    const done = receive(
      ctx,
      { channel: 'chatA', messageId: '1', chatId: '1', userId: '111', text: 'hi' },
      { autoReply: true, onOrdered: () => events.push('ordered') },
    ).then((o) => events.push(`resolved ${o.kind}`));
    await new Promise((r) => setTimeout(r, 10));
    expect(events).toEqual(['push hi', 'ordered']);
    durable();
    await done;
    expect(events).toEqual(['push hi', 'ordered', 'resolved queued']);
    const ignored = await receive(
      ctx,
      { channel: 'chatA', messageId: '2', chatId: '1', userId: '111', text: 'chatter' },
      { autoReply: false, onOrdered: () => events.push('ordered again') },
    );
    expect(ignored).toEqual({ kind: 'ignored', reason: 'auto-reply-off' });
    expect(events).not.toContain('ordered again');
  });
});

describe('ctx.capabilities and the test helpers', () => {
  it('lists every running channel by prefix, in name order, and forgets an unloaded one', async () => {
    const b = fakeChannel('beta');
    const a = fakeChannel('alpha');
    const t = await boot('', b, a);
    const names = (ctx: PluginContext) => ctx.capabilities('channel:').map((c) => `${c.name}@${c.plugin}`);
    expect(names(a.ctx!)).toEqual(['channel:alpha@fake-channel-alpha', 'channel:beta@fake-channel-beta']);
    expect(a.ctx!.capabilities('kernel:').map((c) => c.name)).toEqual(['kernel:info', 'kernel:policy']);
    await t.kernel.host.unload('fake-channel-beta');
    expect(names(a.ctx!)).toEqual(['channel:alpha@fake-channel-alpha']);
  });

  it('createTestContext runs a plugin in a real kernel and hands back its context', async () => {
    const t = await createTestContext(
      {
        id: 'probe',
        version: '1.0.0',
        kind: 'service',
        description: 'probe',
        config: { probeWord: { schema: { type: 'string' } as never, default: 'hi', policy: 'SAFE', description: 'w' } },
      },
      { config: { probeWord: 'ahoy' } },
    );
    open.push(t);
    expect(t.ctx.id).toBe('probe');
    expect(t.ctx.home).toBe(t.home);
    expect(t.ctx.config.get('probeWord')).toBe('ahoy');
    await expect(createTestContext({ id: 'Bad Id', version: '1', kind: 'service', description: 'x' })).rejects.toThrow(/did not load/);
  });

  it('a fake channel gets the agent answer and progress through the channel contract', async () => {
    const chat = fakeChannel('chat');
    let fake!: ReturnType<typeof installFakeProvider>;
    const t = await bootKernel({
      builtins: ['agent'],
      runAgent: true,
      plugins: [chat],
      config: { llmProvider: 'fake', modelName: 'fake-model' },
      before: (home) => {
        fake = installFakeProvider(home);
      },
    });
    open.push(t);
    fake.replies.push({ toolCalls: [{ name: 'no_such_skill', arguments: {} }] }, { text: 'Hello **Ann**' });
    const out = await chat.inbound({ text: 'greet me', chatId: 'room-3', userId: 'ann' });
    const [reply] = await chat.untilReplies(1);
    expect(reply).toMatchObject({ chatId: 'room-3', message: 'Hello **Ann**', actionId: out.kind === 'queued' ? out.action.id : 'none' });
    expect(chat.progress.map((p) => p.update.step)).toEqual([1]);
    expect(fake.calls[0]!.messages.at(-1)!.content).toContain('greet me');
  });
});
