/**
 * The channel runtime (sdk/channel-kit/runtime.ts) on a made-up platform whose "API" is an array: the send path,
 * replies keyed per action across a restart, the failure notice once (none after a cancel), progress gating, and
 * built-in commands versus gated receive. chatA, chatC and chatD run on it; their integration tests cover the
 * platforms, this covers the shared wiring on its own.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type ChannelRuntime, createChannelRuntime, renderChunks } from '../../sdk/channel-kit/index.js';
import { type Action, definePlugin, type InboundMessage, type PluginManifest } from '../../sdk/index.js';
import { bootKernel, type TestKernel, tempHome, removeHome } from '../../sdk/testing/index.js';

interface Sent {
  chat: string;
  text: string;
  replyTo?: string;
}

const manifest = {
  id: 'chatZ',
  version: '1.0.0',
  kind: 'channel',
  description: 'A test channel on the channel runtime.',
  provides: ['channel:chatZ'],
  channel: { name: 'chatZ', userIdPattern: '^u[0-9]+$', userIdExample: 'u1' },
} as const satisfies PluginManifest;

function platform() {
  const sent: Sent[] = [];
  const typing: string[] = [];
  const statuses: string[] = [];
  let rt: ChannelRuntime | undefined;
  const plugin = definePlugin({
    manifest,
    setup(ctx) {
      rt = createChannelRuntime<{ text: string; replyTo?: string }>({
        ctx,
        name: 'chatZ',
        policy: {
          send: { capacity: 100, perSecond: 100 },
          edit: { capacity: 100, perSecond: 100 },
          global: { capacity: 100, perSecond: 100 },
        },
        classify: () => ({ retry: false }),
        sendChunk: async (c, _i, chat) => {
          sent.push({ chat, text: c.text, ...(c.replyTo ? { replyTo: c.replyTo } : {}) });
          return `m${sent.length}`;
        },
        badAddress: (to) => (/^\d+$/.test(to) ? undefined : `"${to}" is not a chatZ room number.`),
        chunks: (m, options) =>
          renderChunks(m.text ?? '', options.format === 'plain' ? 'plain' : 'discord', { limit: 100 }).map((text, i) => ({
            text,
            ...(i === 0 && options.replyToMessageId ? { replyTo: options.replyToMessageId } : {}),
          })),
        target: (action) => {
          const r = action.metadata.replyTo ?? {};
          if (r.chatId == null) throw new Error(`Action ${action.id} has no chatZ room.`);
          return { chatId: String(r.chatId), options: r.messageId != null ? { replyToMessageId: String(r.messageId) } : {} };
        },
        transport: () => ({
          typing: async (chat) => void typing.push(chat),
          status: async (chat, text) => (statuses.push(`${chat}:${text}`), `s${statuses.length}`),
          finish: async () => undefined,
        }),
      });
      ctx.provide('channel:chatZ', rt.capability({ status: () => ({ enabled: true, connected: true, state: 'connected' }) }));
      return { stop: () => rt!.stop(async () => undefined) };
    },
  });
  return { plugin, sent, typing, statuses, rt: () => rt! };
}

const action = (id: string): Action =>
  ({
    id,
    task: 'x',
    source: 'chatZ',
    priority: 1,
    status: 'running',
    createdAt: new Date().toISOString(),
    metadata: { replyTo: { chatId: '7', messageId: '70' } },
  }) as unknown as Action;

let t: TestKernel | undefined;
let home: string | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
  if (home) removeHome(home);
  home = undefined;
});

async function boot(p: ReturnType<typeof platform>, config: Record<string, unknown> = {}) {
  home ??= tempHome('keel-runtime-');
  t = await bootKernel({ home, plugins: [p.plugin], config });
  return t;
}

describe('channel runtime', () => {
  it('send: a wrong address is a clear error and sends nothing; Markdown rendered, cut to the limit, messageOut may drop it', async () => {
    const p = platform();
    const k = await boot(p);
    await expect(p.rt().send('room', 'hi')).rejects.toThrow('"room" is not a chatZ room number.');
    expect(p.sent).toEqual([]);
    const long = `**bold** ${'word '.repeat(40)}`;
    const out = await p.rt().send('5', long);
    expect(p.sent.length).toBeGreaterThan(1);
    expect(out.messageIds).toEqual(p.sent.map((_, i) => `m${i + 1}`));
    for (const s of p.sent) expect(s.text.length).toBeLessThanOrEqual(100);
    expect(p.sent[0]!.text.startsWith('**bold**')).toBe(true);
    // A messageOut tap rewrites what is sent (a redaction), or drops it.
    k.kernel.hooks.messageOut.tapPromise('redact', async (e) => ({ ...e, text: e.text.replace(/hunter2/g, '***') }));
    await p.rt().send('5', 'the password is hunter2');
    expect(p.sent.at(-1)!.text).toBe('the password is \\*\\*\\*');
    k.kernel.hooks.messageOut.tapPromise('drop', async (e) => (e.text.includes('drop me') ? (null as never) : e));
    const before = p.sent.length;
    await expect(p.rt().send('5', 'drop me')).rejects.toThrow('A messageOut hook dropped the message.');
    expect(p.sent).toHaveLength(before);
  });

  it('replies are keyed per action: the n-th reply of a re-run (after a restart) is not sent again', async () => {
    const p = platform();
    await boot(p);
    const a = action('act_rt1');
    await p.rt().reply(a, 'first');
    await p.rt().reply(a, 'second');
    expect(p.sent.map((s) => [s.text, s.replyTo])).toEqual([
      ['first', '70'],
      ['second', '70'],
    ]);
    await t!.close();
    t = undefined;
    // The same action runs again in a new process; its model writes other words.
    const again = platform();
    await boot(again);
    const r = await again.rt().reply(a, 'first, worded differently');
    expect(r.messageId).toBe('m1');
    expect(again.sent).toEqual([]);
    await again.rt().reply(a, 'second, again');
    await again.rt().reply(a, 'a third one');
    expect(again.sent.map((s) => s.text)).toEqual(['a third one']);
  });

  it('a failed action gets one short notice (not again when the settle repeats); a cancelled one none', async () => {
    const p = platform();
    const k = await boot(p);
    const a = action('act_rt2');
    await k.kernel.hooks.actionSettled.promise(a, { status: 'failed', detail: 'Error: boom\n    at x (/secret/path.js:1:1)' });
    await k.kernel.hooks.actionSettled.promise(a, { status: 'failed', detail: 'Error: boom' });
    await new Promise((r) => setTimeout(r, 50));
    expect(p.sent).toHaveLength(1);
    expect(p.sent[0]!.text).toMatch(/boom/);
    expect(p.sent[0]!.text).not.toMatch(/secret|at x/);
    await k.kernel.hooks.actionSettled.promise(action('act_rt3'), { status: 'failed', detail: 'action act_rt3 was cancelled' });
    await new Promise((r) => setTimeout(r, 50));
    expect(p.sent).toHaveLength(1);
  });

  it('progress: typing and status while enabled; nothing when progressFeedbackEnabled is false; typing only when asked', async () => {
    const p = platform();
    await boot(p, { progressFeedbackTypingOnly: true });
    const cap = t!.kernel.registry.use<{ progress(a: Action, u: object): Promise<void> }>('channel:chatZ')!;
    await cap.progress(action('act_rt4'), { thought: 'thinking hard', step: 1 });
    expect(p.typing).toContain('7');
    expect(p.statuses).toEqual([]);
    await p.rt().progress.stopAll();
    await t!.close();
    t = undefined;
    const q = platform();
    await boot(q, { progressFeedbackEnabled: false });
    await t!.kernel.registry.use<{ progress(a: Action, u: object): Promise<void> }>('channel:chatZ')!.progress(action('act_rt5'), {
      thought: 'x',
      step: 1,
    });
    expect(q.typing).toEqual([]);
    expect(q.statuses).toEqual([]);
  });

  it('handle: a built-in command is answered by the channel under cmd:<id>; other messages are gated by <name>AutoReplyEnabled', async () => {
    const p = platform();
    const k = await boot(p);
    const msg = (id: string, text: string, command?: string): InboundMessage => ({
      channel: 'chatZ',
      messageId: id,
      chatId: '9',
      userId: 'u1',
      text,
      isGroup: true,
      ...(command ? { command } : {}),
    });
    expect(await p.rt().handle(msg('c1', '/help', 'help'), { statusLine: () => 'chatZ: fine.' })).toBe('command:help');
    const answered = p.sent.length;
    expect(answered).toBeGreaterThan(0);
    expect(p.sent.every((s) => s.chat === '9')).toBe(true);
    expect(p.sent.map((s) => s.text).join(' ')).toMatch(/status/);
    // A redelivered command finds its answer in the ledger.
    await p.rt().handle(msg('c1', '/help', 'help'), { statusLine: () => 'chatZ: fine.' });
    expect(p.sent).toHaveLength(answered);
    expect(await p.rt().handle(msg('m1', 'hello all'), { statusLine: () => '' })).toBe('ignored:auto-reply-off');
    expect(k.kernel.queue.list().pending).toHaveLength(0);
  });
});
