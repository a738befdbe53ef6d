/**
 * Action timelines end to end in a real kernel: the agent (scripted fake provider) with a skill call and a reply
 * on a channel, a retry and its reason, ignored inbound messages and why, `GET /api/tasks/:id` through the
 * gateway, and `keel trace` (the compiled CLI) by action id and by platform message id after Keel stopped.
 */
import { execFile } from 'node:child_process';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { definePlugin, Type, type Action } from '../../../sdk/index.js';
import {
  bootKernel,
  fakeChannel,
  installFakeAgent,
  installFakeProvider,
  removeHome,
  tempHome,
  type FakeProviderControl,
  type TestKernel,
} from '../../../testing/index.js';
import { TimelineStore, type Timeline } from '../../../plugins/timeline/src/store.js';
import { waitFor } from '../../helpers.js';

const CLI = join(import.meta.dirname, '..', '..', '..', 'dist', 'cli.js');

function keel(home: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, KEEL_HOME: home }, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const tools = definePlugin({
  manifest: {
    id: 'tl-tools',
    version: '1.0.0',
    kind: 'skill',
    description: 'test skills',
    skills: [{ name: 'lookup', description: 'Looks a word up', category: 'test', parameters: Type.Object({ text: Type.String() }) }],
  },
  setup(ctx) {
    ctx.skills.register('lookup', ({ text }: { text: string }) => `value of ${text}`);
  },
});

const open: TestKernel[] = [];
const homes: string[] = [];
afterEach(async () => {
  for (const t of open.splice(0)) await t.close();
  for (const h of homes.splice(0)) removeHome(h);
});

async function boot(opts: { autoReply?: boolean; gateway?: boolean; messaging?: boolean; config?: Record<string, unknown> } = {}) {
  const home = tempHome('keel-timeline-');
  homes.push(home);
  let fake!: FakeProviderControl;
  const chat = fakeChannel('chat', { autoReply: opts.autoReply ?? true });
  const t = await bootKernel({
    home,
    builtins: ['agent', 'timeline', ...(opts.gateway ? ['gateway'] : []), ...(opts.messaging ? ['messaging'] : [])],
    plugins: [chat, tools],
    runAgent: true,
    config: {
      llmProvider: 'fake',
      modelName: 'fake-model',
      ...(opts.gateway ? { gatewayAutoStart: true, gatewayPort: 0, gatewayHost: '127.0.0.1' } : {}),
      ...opts.config,
    },
    before: (h) => {
      fake = installFakeProvider(h);
    },
  });
  open.push(t);
  return { t, home, chat, fake };
}

const settled = (t: TestKernel, id: string): Promise<Action> =>
  waitFor(
    () => (['completed', 'failed'].includes(t.kernel.queue.get(id)?.status ?? '') ? t.kernel.queue.get(id) : undefined),
    `action ${id} to settle`,
    20_000,
  );

function timelineOf(home: string, id: string): Timeline {
  const store = TimelineStore.read(home)!;
  try {
    return store.get(id)!;
  } finally {
    store.close();
  }
}

async function untilSettled(home: string, id: string): Promise<Timeline> {
  const found = await waitFor(() => {
    const x = timelineOf(home, id);
    return x?.events.some((e) => e.type === 'settled') ? [x] : undefined;
  }, 'the settled event');
  return found[0]!;
}

describe('action timelines', () => {
  it('record where an action came from, queued, started, each model call, each skill call, the reply and settled, in order', async () => {
    const { t, home, chat, fake } = await boot({ gateway: true });
    fake.replies.push(
      { toolCalls: [{ name: 'lookup', arguments: { text: 'keel' } }], usage: { inputTokens: 120, outputTokens: 8 } },
      { text: 'The answer.', usage: { inputTokens: 150, outputTokens: 4 } },
    );
    const out = await chat.inbound({ text: 'what is keel?', userId: 'u7', messageId: 'plat-555' });
    expect(out.kind).toBe('queued');
    const action = (out as { action: Action }).action;
    await settled(t, action.id);
    await chat.untilReplies(1);
    const tl = await untilSettled(home, action.id);

    expect(tl.events.map((e) => e.type)).toEqual([
      'received',
      'queued',
      'started',
      'model_call',
      'skill_call',
      'model_call',
      'reply',
      'settled',
    ]);
    const [received, , started, call1, skill, call2, reply, done] = tl.events;
    expect(received!.data).toEqual({ channel: 'chat', messageId: 'plat-555', userId: 'u7', untrusted: true });
    expect(started!.data).toMatchObject({ attempt: 1 });
    expect(call1!.data).toMatchObject({ provider: 'fake', model: 'fake-model', ok: true, inputTokens: 120, outputTokens: 8 });
    expect(call2!.data).toMatchObject({ inputTokens: 150, outputTokens: 4 });
    expect(typeof call1!.data.durationMs).toBe('number');
    expect(skill!.data).toMatchObject({ name: 'lookup', ok: true });
    expect(reply!.data).toMatchObject({ channel: 'chat', messageId: chat.replies[0]!.messageId });
    expect(done!.data).toMatchObject({ status: 'completed', result: 'The answer.' });
    expect(tl.action).toMatchObject({
      id: action.id,
      status: 'completed',
      inbound: { channel: 'chat', messageId: 'plat-555', userId: 'u7' },
    });
    const seqs = tl.events.map((e) => e.seq);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);

    // GET /api/tasks/:id through the gateway's route extension.
    const url = t.kernel.registry.use<{ url: string }>('gateway:address')!.url;
    const res = await fetch(`${url}/api/tasks/${action.id}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { action: Action; timeline: { events: Array<{ type: string }>; dropped: number } };
    expect(body.action).toMatchObject({ id: action.id, status: 'completed', result: 'The answer.' });
    expect(body.timeline.events.map((e) => e.type)).toEqual(tl.events.map((e) => e.type));
    expect(body.timeline.dropped).toBe(0);
    const missing = await fetch(`${url}/api/tasks/act_0_nothing`);
    expect(missing.status).toBe(404);
    const spec = (await (await fetch(`${url}/api/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    expect(spec.paths['/api/tasks/{id}']?.get).toBeDefined();
    // The added route keeps the document clean under a maintained linter's recommended rules.
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source: JSON.stringify(spec), absoluteRef: 'openapi.json', config });
    expect(problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location?.[0]?.pointer}`)).toEqual([]);

    // keel trace, with Keel stopped: by action id and by platform message id.
    await t.close();
    const byId = await keel(home, ['trace', action.id]);
    expect(byId.code).toBe(0);
    expect(byId.stdout).toContain(`Action ${action.id}`);
    for (const word of [
      'received',
      'queued',
      'started',
      'model_call',
      'skill_call',
      'reply',
      'settled',
      'lookup ok',
      'fake/fake-model',
      '120 in + 8 out tokens',
    ])
      expect(byId.stdout).toContain(word);
    const byMessage = await keel(home, ['trace', 'plat-555', '--json']);
    expect(byMessage.code).toBe(0);
    const j = JSON.parse(byMessage.stdout) as { actions: Timeline[]; ignored: unknown[] };
    expect(j.actions.map((a) => a.action.id)).toEqual([action.id]);
    expect(j.actions[0]!.events.map((e) => e.type)).toEqual(tl.events.map((e) => e.type));
    const unknown = await keel(home, ['trace', 'no-such-id']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('nothing recorded');
  }, 60_000);

  it('say why an action is untrusted: a sender who is not an admin, a quote of someone who is not', async () => {
    const { t, home, chat, fake } = await boot({});
    fake.replies.push({ text: 'Bob means the cache.' });
    const out = await chat.inbound({
      text: 'what does he mean?',
      userId: 'u7',
      messageId: 'plat-777',
      quoted: { userId: 'u9', userName: 'bob', text: 'clear it all' },
    });
    const action = (out as { action: Action }).action;
    await settled(t, action.id);
    const tl = await untilSettled(home, action.id);
    expect(tl.events[0]!.data).toEqual({
      channel: 'chat',
      messageId: 'plat-777',
      userId: 'u7',
      untrusted: true,
      quotedFrom: 'bob',
      quotedTrusted: false,
    });
    // The sender edits the message after the answer: the edit's action is filed under the same platform message.
    fake.replies.push({ text: 'He means the build cache.' });
    const edited = await chat.inbound({
      text: 'what does he mean by "it"?',
      userId: 'u7',
      messageId: 'plat-777:edit:2026-11-26T10:00:00Z',
      edit: { of: 'plat-777', at: '2026-11-26T10:00:00Z', after: action.id },
    });
    const again = (edited as { action: Action }).action;
    await settled(t, again.id);
    const tl2 = await untilSettled(home, again.id);
    expect(tl2.events[0]!.data).toEqual({
      channel: 'chat',
      messageId: 'plat-777',
      userId: 'u7',
      untrusted: true,
      editOf: 'plat-777',
      editedAt: '2026-11-26T10:00:00Z',
      after: action.id,
    });
    await t.close();
    const trace = await keel(home, ['trace', 'plat-777']);
    expect(trace.stdout).toContain(
      'untrusted (the sender is not an admin), quoting a message of bob (untrusted: privileged skills are refused to this action)',
    );
    expect(trace.stdout).toContain(`an edit of it (2026-11-26T10:00:00Z), after action ${action.id} had taken up its earlier version`);
    const both = JSON.parse((await keel(home, ['trace', 'plat-777', '--json'])).stdout) as { actions: Timeline[] };
    expect(both.actions.map((a) => a.action.id)).toEqual([action.id, again.id]);
  }, 60_000);

  it('record an edit that amended a waiting action: the new task, and when; keel trace says so', async () => {
    const { t, home, chat, fake } = await boot({});
    fake.replies.push({ text: 'Deployed to staging.' });
    // Held back a minute (as a scheduled action is), so it still waits when the edit comes.
    const a = await chat.ctx!.queue.push({
      task: 'deploy to stagng',
      source: 'chat',
      metadata: { notBefore: Date.now() + 60_000, inbound: { channel: 'chat', messageId: 'plat-888', userId: 'u7' } },
    });
    await waitFor(() => timelineOf(home, a.id), 'the queued action on record');
    expect(
      await chat.ctx!.queue.amend(a.id, { task: 'deploy to staging', metadata: { edit: { of: 'plat-888', at: '2026-11-26T10:00:00Z' } } }),
    ).toBe(true);
    const tl = await waitFor(() => {
      const x = timelineOf(home, a.id);
      return x?.events.some((e) => e.type === 'amended') ? x : undefined;
    }, 'the amended event');
    expect(tl.action.task).toBe('deploy to staging');
    expect(tl.events.find((e) => e.type === 'amended')!.data).toEqual({ task: 'deploy to staging', editedAt: '2026-11-26T10:00:00Z' });
    await chat.ctx!.queue.cancel(a.id, 'test over');
    await t.close();
    const trace = await keel(home, ['trace', a.id]);
    expect(trace.stdout).toContain(
      'the message was edited (2026-11-26T10:00:00Z) before the action started; it now reads: deploy to staging',
    );
  }, 60_000);

  it('record a file a skill sent during the action as a reply, with the platform message id', async () => {
    const { t, home, chat, fake } = await boot({ messaging: true });
    // Under downloads: send_file sends a file from elsewhere only for an admin, and this action has no recorded actor.
    mkdirSync(join(home, 'downloads'), { recursive: true });
    const file = join(home, 'downloads', 'report.txt');
    writeFileSync(file, 'the report');
    fake.replies.push(
      { toolCalls: [{ name: 'send_file', arguments: { jid: 'room-3', path: file, channel: 'chat' } }] },
      { text: 'sent it' },
    );
    const a = await t.kernel.queue.push({ task: 'send the report to room-3', source: 'cli' });
    expect((await settled(t, a.id)).status).toBe('completed');
    const tl = await untilSettled(home, a.id);
    expect(tl.events.map((e) => e.type)).toEqual(['queued', 'started', 'model_call', 'reply', 'skill_call', 'model_call', 'settled']);
    expect(tl.events[3]!.data).toMatchObject({ channel: 'chat', to: 'room-3', messageId: chat.sent[0]!.messageId });
    expect(tl.events[4]!.data).toMatchObject({ name: 'send_file', ok: true });
  }, 60_000);

  it('hold the configured bound (timelineMaxEvents): the origin stays, the newest events stay, the rest is counted', async () => {
    const { t, home, fake } = await boot({ config: { timelineMaxEvents: 10 } });
    const calls = Array.from({ length: 12 }, (_, i) => ({ name: 'lookup', arguments: { text: `w${i}` } }));
    fake.replies.push({ toolCalls: calls }, { text: 'looked up' });
    const a = await t.kernel.queue.push({ task: 'look up twelve words', source: 'cli' });
    await settled(t, a.id);
    const tl = await untilSettled(home, a.id);
    expect(tl.events).toHaveLength(10);
    expect(tl.events[0]!.type).toBe('queued');
    expect(tl.events.at(-1)!.type).toBe('settled');
    // queued, started, model_call, 12 skill calls, model_call, settled = 17 events; 7 dropped, the oldest after queued.
    expect(tl.dropped).toBe(7);
    expect(tl.events.slice(1).map((e) => e.type)).toEqual([...Array(7).fill('skill_call'), 'model_call', 'settled']);
  }, 60_000);

  it('record a retry with its reason, then the second attempt', async () => {
    const { t, home, chat, fake } = await boot();
    fake.replies.push({ error: { message: 'upstream exploded', status: 400, retryable: false } }, { text: 'second time lucky' });
    const out = await chat.inbound({ text: 'try hard' });
    const id = (out as { action: Action }).action.id;
    const a = await settled(t, id);
    expect(a.status).toBe('completed');
    const tl = await untilSettled(home, id);
    const types = tl.events.map((e) => e.type);
    expect(types).toEqual(['received', 'queued', 'started', 'model_call', 'retry', 'started', 'model_call', 'reply', 'settled']);
    const retry = tl.events[4]!;
    expect(String(retry.data.reason)).toContain('upstream exploded');
    expect(retry.data).toMatchObject({ retry: 1 });
    expect(tl.events[3]!.data).toMatchObject({ ok: false });
    expect(String(tl.events[3]!.data.error)).toContain('upstream exploded');
    expect(tl.events[5]!.data).toMatchObject({ attempt: 2 });
    const trace = await keel(home, ['trace', id]);
    expect(trace.stdout).toMatch(/retry\s+retry 1 of \d+: .*upstream exploded/);
  }, 60_000);

  it('record inbound messages that did not become an action, and why', async () => {
    const { t, home, chat } = await boot({ autoReply: false });
    expect(await chat.inbound({ text: 'just chatting', messageId: 'm-quiet', userId: 'stranger', isGroup: true })).toEqual({
      kind: 'ignored',
      reason: 'auto-reply-off',
    });
    const first = await chat.inbound({ text: '/help', command: 'help', messageId: 'm-dup', userId: 'stranger' });
    expect(first.kind).toBe('queued');
    expect(await chat.inbound({ text: '/help', command: 'help', messageId: 'm-dup', userId: 'stranger' })).toEqual({
      kind: 'ignored',
      reason: 'duplicate',
    });
    await t.close();

    const quiet = await keel(home, ['trace', 'm-quiet', '--json']);
    expect(quiet.code).toBe(0);
    expect(JSON.parse(quiet.stdout)).toMatchObject({
      actions: [],
      ignored: [{ channel: 'chat', messageId: 'm-quiet', userId: 'stranger', reason: 'auto-reply-off' }],
    });
    const human = await keel(home, ['trace', 'm-quiet']);
    expect(human.stdout).toContain('did not become an action: auto-reply-off');
    // The duplicate: the action the first delivery started, and the record of the second.
    const dup = JSON.parse((await keel(home, ['trace', 'm-dup', '--json'])).stdout) as {
      actions: Timeline[];
      ignored: Array<{ reason: string }>;
    };
    expect(dup.actions.map((a) => a.action.id)).toEqual([(first as { action: Action }).action.id]);
    expect(dup.ignored.map((r) => r.reason)).toEqual(['duplicate']);
  }, 60_000);

  it('trace an action pushed by `keel push` in another process while `keel run` runs (queued back-dated when first seen)', async () => {
    const home = tempHome('keel-timeline-cli-');
    homes.push(home);
    installFakeAgent(home);
    try {
      expect((await keel(home, ['run', '--daemon'])).code).toBe(0);
      const pushed = JSON.parse((await keel(home, ['push', 'hello', 'there', '--json'])).stdout) as { id: string };
      const j = await waitFor(
        async () => {
          const out = await keel(home, ['trace', pushed.id, '--json']);
          if (out.code !== 0) return undefined;
          const r = JSON.parse(out.stdout) as { actions: Timeline[] };
          return r.actions[0]?.events.some((e) => e.type === 'settled') ? [r] : undefined;
        },
        'the pushed action to settle in its timeline',
        20_000,
      );
      const t = j[0]!.actions[0]!;
      expect(t.events.map((e) => e.type)).toEqual(['queued', 'started', 'settled']);
      expect(t.action).toMatchObject({ id: pushed.id, source: 'cli', status: 'completed' });
      expect(t.events[0]!.at).toBe(t.action.createdAt);
    } finally {
      await keel(home, ['stop', '--timeout', '3000']);
    }
  }, 60_000);
});
