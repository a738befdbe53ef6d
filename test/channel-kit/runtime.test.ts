/**
 * The channel runtime (sdk/channel-kit/runtime.ts) on a made-up platform whose "API" is an array: the send path,
 * replies keyed per action across a restart, the failure notice once (none after a cancel), progress gating, and
 * built-in commands versus gated receive. chatA, chatC and chatD run on it; their integration tests cover the
 * platforms, this covers the shared wiring on its own.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ChannelRuntime,
  ChannelStore,
  createChannelRuntime,
  HandedInputs,
  renderChunks,
  routeDelete,
  routeEdit,
} from '../../sdk/channel-kit/index.js';
import { type Action, type AgentInput, definePlugin, type InboundMessage, type PluginManifest } from '../../sdk/index.js';
import { bootKernel, type TestKernel, tempHome, removeHome } from '../../testing/index.js';

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

/** A message of user u1 in chatZ room 9, a group. */
const groupMessage = (id: string, text: string, extra: Partial<InboundMessage> = {}): InboundMessage => ({
  channel: 'chatZ',
  messageId: id,
  chatId: '9',
  userId: 'u1',
  text,
  isGroup: true,
  ...extra,
});

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

  it('a failed action gets one short notice (not again when the settle repeats); a cancelled one none, unless the operator stopped it', async () => {
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
    await k.kernel.hooks.actionSettled.promise(action('act_rt5'), { status: 'failed', detail: 'cancelled from chatZ by 42' });
    await new Promise((r) => setTimeout(r, 50));
    expect(p.sent).toHaveLength(1);
    // Stopped from the dashboard or `keel cancel`: the person who asked hears why nothing more comes.
    await k.kernel.hooks.actionSettled.promise(action('act_rt4'), { status: 'failed', detail: 'cancelled by the operator (gateway)' });
    await new Promise((r) => setTimeout(r, 50));
    expect(p.sent.map((s) => s.text)).toEqual([expect.stringMatching(/boom/), 'The operator stopped this request.']);
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

  it('progress: nothing new is started while the channel stops (its taps and capability are still live until stop returns)', async () => {
    const p = platform();
    await boot(p);
    const cap = t!.kernel.registry.use<{ progress(a: Action, u: object): Promise<void> }>('channel:chatZ')!;
    let release: () => void = () => undefined;
    const connectionClosed = new Promise<void>((r) => {
      release = r;
    });
    const stopped = p.rt().stop(() => connectionClosed);
    // An action starts and reports progress while the connection is being closed.
    await t!.kernel.hooks.actionStarted.promise(action('act_rt_stop'));
    await cap.progress(action('act_rt_stop'), { thought: 'still working', step: 1 });
    release();
    await stopped;
    await new Promise((r) => setTimeout(r, 50));
    expect(p.typing).toEqual([]);
    expect(p.statuses).toEqual([]);
  });

  it('handle: a built-in command is answered by the channel under cmd:<id>; other messages are gated by <name>AutoReplyEnabled', async () => {
    const p = platform();
    const k = await boot(p);
    const msg = (id: string, text: string, command?: string) => groupMessage(id, text, command ? { command } : {});
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

describe('channel runtime: edits and deletions', () => {
  const msg = (id: string, text: string, extra: Partial<InboundMessage> = {}) => groupMessage(id, text, { mentioned: true, ...extra });
  const h = { statusLine: () => 'chatZ: fine.' };
  async function setup() {
    const p = platform();
    const k = await boot(p);
    return { p, rt: p.rt(), k, pending: () => k.kernel.queue.list().pending };
  }

  it('an edit of a waiting message amends it in place (its place in line kept); one that drops the mention withdraws it; a repeat changes nothing', async () => {
    const { rt, pending, k } = await setup();
    const amended: string[] = [];
    k.kernel.hooks.actionAmended.tap('test', (a: Action) => void amended.push(`${a.id}:${a.task}`));
    expect(await rt.handle(msg('m1', 'deploy to stagng'), h)).toBe('queued');
    expect(await rt.handle(msg('m2', 'then tell the team'), h)).toBe('queued');
    const [first, second] = pending();
    const out = await rt.edited({ inbound: msg('m1', 'deploy to staging'), editedAt: 'e1' }, h);
    expect(out).toBe(`amended:${first!.id}`);
    // Same action, same place in line (before the message sent after it), the edited text.
    expect(pending().map((a) => [a.id, a.task])).toEqual([
      [first!.id, 'deploy to staging'],
      [second!.id, 'then tell the team'],
    ]);
    const now = pending()[0]!;
    expect(now.metadata.edit).toEqual({ of: 'm1', at: 'e1' });
    expect(amended).toEqual([`${first!.id}:deploy to staging`]);
    // The answer still goes to the message the person wrote (and edited).
    expect(now.metadata.replyTo).toMatchObject({ chatId: '9', messageId: 'm1' });
    expect(now.metadata.inbound).toMatchObject({ messageId: 'm1:edit:e1' });
    // The same edit delivered again: the waiting action already reads so.
    expect(await rt.edited({ inbound: msg('m1', 'deploy to staging'), editedAt: 'e1' }, h)).toBe('ignored:edit-unchanged');
    expect(pending()).toHaveLength(2);
    // Edited again without the mention (auto-reply is off): the request is withdrawn.
    const out2 = await rt.edited({ inbound: msg('m1', 'never mind', { mentioned: false }), editedAt: 'e2' }, h);
    expect(out2).toBe(`withdrawn:${first!.id} removed ignored:auto-reply-off`);
    expect(pending().map((a) => a.id)).toEqual([second!.id]);
  });

  it('an edit long after the message changes nothing (and says so to messageIgnored); a command edit is a command', async () => {
    const { rt, pending, p, k } = await setup();
    const ignored: string[] = [];
    k.kernel.hooks.messageIgnored.tap(
      'test',
      (e: { messageId: string; reason: string }) => void ignored.push(`${e.messageId}:${e.reason}`),
    );
    await rt.handle(msg('m4', 'first'), h);
    const before = pending();
    const old = Date.now() - 16 * 60_000;
    expect(await rt.edited({ inbound: msg('m4', 'second'), editedAt: 'e1', sentAt: old }, h)).toBe('ignored:edit-too-old');
    expect(await rt.edited({ inbound: msg('m4', 'first'), editedAt: 'e2' }, h)).toBe('ignored:edit-unchanged');
    expect(ignored).toEqual(['m4:edit-too-old', 'm4:edit-unchanged']);
    expect(pending()).toEqual(before);
    expect(await rt.edited({ inbound: msg('m5', '/help', { command: 'help' }), editedAt: 'e1' }, h)).toBe('command:help');
    expect(p.sent.map((s) => s.text).join(' ')).toMatch(/status/);
  });

  it('an ignored message edited to mention the bot becomes an action; a deleted message takes its waiting action with it', async () => {
    const { rt, pending } = await setup();
    expect(await rt.handle(msg('m2', 'what time is it', { mentioned: false }), h)).toBe('ignored:auto-reply-off');
    expect(await rt.edited({ inbound: msg('m2', '@bot what time is it'), editedAt: 'e1' }, h)).toBe('queued');
    const a = pending()[0]!;
    expect(a.metadata.edit).toEqual({ of: 'm2', at: 'e1' });
    // The edit's action is found from the message it edits.
    expect(await rt.deleted('m2')).toBe(`cancelled:${a.id} removed`);
    expect(pending()).toEqual([]);
    expect(await rt.deleted('m8')).toBe('ignored:unknown');
  });
});

/** routeEdit / routeDelete against a queue whose actions are in the states a test needs (waiting, running, answered). */
describe('routeEdit and routeDelete by the state of the action', () => {
  const stores: Array<{ store: ChannelStore; dir: string }> = [];
  afterEach(() => {
    for (const { store, dir } of stores.splice(0)) {
      store.close();
      removeHome(dir);
    }
  });
  const inbound = (text: string): InboundMessage => ({
    channel: 'chatZ',
    messageId: 'm3',
    chatId: '9',
    userId: 'u1',
    userName: 'ann',
    text,
  });
  const act = (id: string, status: Action['status'], task = 'summarise the report'): Action =>
    ({
      id,
      task,
      status,
      source: 'chatZ',
      priority: 5,
      createdAt: `2026-11-26T10:00:0${id.slice(-1)}.000Z`,
      metadata: { inbound: { channel: 'chatZ', messageId: 'm3', userId: 'u1' } },
    }) as unknown as Action;
  function world(actions: Action[], runningHere: string[] = []) {
    const dir = tempHome('keel-edits-');
    const store = ChannelStore.open(dir, 'chatZ');
    stores.push({ store, dir });
    const made: InboundMessage[] = [];
    const cancelled: string[] = [];
    const offered: Array<{ id: string; input: AgentInput }> = [];
    const ctx = {
      queue: {
        list: () => ({
          pending: actions.filter((a) => a.status === 'pending' || a.status === 'executing'),
          completed: actions.filter((a) => a.status === 'completed'),
          failed: actions.filter((a) => a.status === 'failed'),
        }),
        cancel: async (id: string) => {
          cancelled.push(id);
          const a = actions.find((x) => x.id === id);
          return a?.status === 'pending' ? 'removed' : a?.status === 'executing' ? 'stopping' : 'settled';
        },
      },
      use: (name: string) =>
        name === 'agent:inbox'
          ? {
              running: (id: string) => runningHere.includes(id),
              offer: (id: string, input: AgentInput) => runningHere.includes(id) && (offered.push({ id, input }), true),
            }
          : undefined,
    } as unknown as Parameters<typeof routeEdit>[0];
    const handed = new HandedInputs(store, { warn() {} }, async (m) => void made.push(m));
    const amended: Array<{ id: string; m: InboundMessage }> = [];
    const paths = {
      deliver: async (m: InboundMessage) => (made.push(m), 'queued'),
      amend: async (id: string, m: InboundMessage) => {
        if (actions.find((a) => a.id === id)?.status !== 'pending') return { kind: 'started' as const };
        amended.push({ id, m });
        return { kind: 'amended' as const };
      },
    };
    return { ctx, store, handed, paths, made, cancelled, offered, amended };
  }

  it('running here: handed to the action and on record until it settles; read, the record goes; unread, a new message', async () => {
    const w = world([act('act_1', 'executing')], ['act_1']);
    expect(await routeEdit(w.ctx, w.handed, { inbound: inbound('summarise the Q3 report'), editedAt: 'e1' }, w.paths)).toBe(
      'to-action:act_1',
    );
    expect(w.offered).toEqual([
      {
        id: 'act_1',
        input: expect.objectContaining({
          text: '[ann (u1) edited the message this task came from; it now reads:]\nsummarise the Q3 report',
          untrusted: true,
          from: 'chatZ:u1',
        }),
      },
    ]);
    expect(w.cancelled).toEqual([]);
    expect(w.made).toEqual([]);
    expect(w.store.values('handed:').map((v) => v.key)).toEqual(['handed:act_1:m3:edit:e1']);
    // Read and settled for good: the record goes, nothing more is asked.
    w.handed.settled('act_1', 'completed');
    expect(w.store.values('handed:')).toEqual([]);
    // Another edit the action never reads: it becomes a new message, after that action.
    await routeEdit(w.ctx, w.handed, { inbound: inbound('summarise the Q4 report'), editedAt: 'e2' }, w.paths);
    w.offered[1]!.input.onUnread?.();
    await w.handed.drain();
    expect(w.made).toEqual([
      expect.objectContaining({
        text: 'summarise the Q4 report',
        messageId: 'm3:edit:e2',
        replyTo: { messageId: 'm3' },
        edit: { of: 'm3', at: 'e2', after: 'act_1' },
      }),
    ]);
    expect(w.store.values('handed:')).toEqual([]);
  });

  it('running elsewhere, or answered: a new message after it (nothing cancelled); failed alike', async () => {
    for (const status of ['executing', 'completed', 'failed'] as const) {
      const w = world([act('act_2', status)]);
      expect(await routeEdit(w.ctx, w.handed, { inbound: inbound('summarise it'), editedAt: 'e1' }, w.paths)).toBe('queued');
      expect(w.cancelled).toEqual([]);
      expect(w.made.map((m) => m.edit)).toEqual([{ of: 'm3', at: 'e1', after: 'act_2' }]);
    }
  });

  it('the newest action of the message counts (an edit of an edit); an unchanged text changes nothing', async () => {
    const older = act('act_1', 'completed');
    const newer = {
      ...act('act_3', 'pending', 'summarise the Q3 report'),
      metadata: { inbound: { channel: 'chatZ', messageId: 'm3:edit:e1' }, edit: { of: 'm3', at: 'e1' } },
    } as unknown as Action;
    const w = world([older, newer]);
    expect(await routeEdit(w.ctx, w.handed, { inbound: inbound('summarise the Q3 report '), editedAt: 'e2' }, w.paths)).toBe(
      'ignored:edit-unchanged',
    );
    expect(await routeEdit(w.ctx, w.handed, { inbound: inbound('summarise the Q4 report'), editedAt: 'e3' }, w.paths)).toBe(
      'amended:act_3',
    );
    expect(w.cancelled).toEqual([]);
    expect(w.amended.map(({ id, m }) => [id, m.text, m.edit])).toEqual([['act_3', 'summarise the Q4 report', { of: 'm3', at: 'e3' }]]);
  });

  it('a deletion: waiting or running here is cancelled; answered is left', async () => {
    for (const [status, out] of [
      ['pending', 'cancelled:act_4 removed'],
      ['executing', 'cancelled:act_4 stopping'],
      ['completed', 'ignored:answered'],
    ] as const) {
      const w = world([act('act_4', status)]);
      expect(await routeDelete(w.ctx, 'chatZ', 'm3')).toBe(out);
      expect(w.cancelled).toEqual(status === 'completed' ? [] : ['act_4']);
    }
  });
});
