/**
 * Hook taps are contained like skills: a tap that throws (or rejects) on ANY hook of the catalogue is logged with
 * its plugin id and hook name, counted towards the plugin's health and quarantine, and never changes the outcome:
 * the action completes once, a push is acknowledged once, a waterfall passes its value on, a veto fails closed.
 *
 * The hooks are taken from the catalogue itself, so a hook added later without a trigger here fails this test.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { HookName } from '../../sdk/hooks.js';
import type { AgentCapability } from '../../sdk/core-capabilities.js';
import type { PluginContext, PluginDefinition } from '../../sdk/plugin.js';
import type { Action, InboundMessage, MessageOutEvent, PluginManifest, SkillResult } from '../../sdk/index.js';
import { createHooks, tapOwners } from '../../kernel/hooks/catalogue.js';
import { startKernel, type Kernel } from '../../kernel/kernel.js';
import { LogSink } from '../../kernel/log.js';
import type { PluginCandidate } from '../../kernel/plugins/discover.js';
import { rm, tmp, waitFor } from '../helpers.js';

const OPERATOR = { kind: 'operator', channel: 'cli' } as const;
const HOOKS = Object.keys(createHooks()) as HookName[];

function candidate(manifest: PluginManifest, setup: PluginDefinition['setup']): PluginCandidate {
  return { id: manifest.id, origin: 'user', dir: `/test/${manifest.id}`, manifest, load: async () => ({ manifest, setup }) };
}

interface Driver {
  ctx?: PluginContext;
  skill?: SkillResult;
  messageIn?: unknown;
  messageOut?: unknown;
}

const INBOUND: InboundMessage = { channel: 'fake', messageId: 'm1', chatId: 'c1', userId: 'u1', text: 'hello in' };
const OUTBOUND: MessageOutEvent = { channel: 'fake', to: 'u1', text: 'hello out' };

/** Provides the agent: each action calls a skill, emits every hook a plugin may emit, and completes. */
function driver(d: Driver): PluginCandidate {
  const manifest: PluginManifest = {
    id: 'driver',
    version: '1.0.0',
    kind: 'service',
    description: 'drives every hook',
    provides: ['agent'],
    skills: [
      {
        name: 'probe',
        description: 'answers ok',
        category: 'test',
        parameters: { type: 'object', properties: {}, additionalProperties: false } as never,
      },
    ],
  };
  return candidate(manifest, (ctx) => {
    d.ctx = ctx;
    ctx.skills.register('probe', () => 'ok');
    const agent: AgentCapability = {
      ready: () => ({ ready: true }),
      async execute(action: Action) {
        if (action.metadata.repair) return { result: 'repair noted' };
        if (action.task.startsWith('fail:')) throw new Error(`own reason: ${action.task}`);
        ctx.emit('thinking', { actionId: action.id, thought: 'thinking about it' });
        d.skill = await ctx.skills.execute('probe', {}, OPERATOR, { action });
        ctx.emit('observation', { actionId: action.id, skill: 'probe', result: d.skill.result });
        ctx.emit('modelCall', {
          actionId: action.id,
          provider: 'fake',
          model: 'm',
          purpose: 'main',
          ok: true,
          inputTokens: 1,
          outputTokens: 1,
          durationMs: 1,
        });
        ctx.emit('messageDelivered', { channel: 'fake', actionId: action.id, messageId: 'out-1', messageIds: ['out-1'] });
        ctx.emit('messageIgnored', { channel: 'fake', messageId: 'm0', reason: 'duplicate' });
        d.messageIn = await ctx.emit('messageIn', { ...INBOUND });
        d.messageOut = await ctx.emit('messageOut', { ...OUTBOUND });
        return { result: `done: ${action.task}` };
      },
    };
    ctx.provide('agent', agent);
  });
}

/** Taps `hook` with a function that throws (or returns a rejected promise) and counts its calls. */
function thrower(hook: HookName, mode: 'throw' | 'reject', calls: { n: number }): PluginCandidate {
  const manifest: PluginManifest = { id: 'thrower', version: '1.0.0', kind: 'service', description: 'a plugin whose tap fails' };
  return candidate(manifest, (ctx) => {
    ctx.hooks.tap(hook, () => {
      calls.n++;
      const e = new Error(`tap of ${hook} broke`);
      if (mode === 'throw') throw e;
      return Promise.reject(e);
    });
  });
}

let kernel: Kernel | undefined;
let dirs: string[] = [];
afterEach(async () => {
  await kernel?.stop();
  kernel = undefined;
  dirs.forEach(rm);
  dirs = [];
});

async function boot(extra: PluginCandidate[], quarantineAfter: number): Promise<Kernel> {
  const home = tmp();
  const builtins = tmp('keel-builtins-');
  dirs.push(home, builtins);
  kernel = await startKernel({
    home,
    builtinDir: builtins,
    env: {},
    watchSkills: false,
    runAgent: true,
    extraPlugins: extra,
    logs: new LogSink({ quiet: true }),
    host: { quarantineAfter },
    runner: { maxIdleMs: 50 },
  });
  return kernel;
}

const tapErrors = (k: Kernel, hook: HookName) =>
  k.logs
    .recent({ level: 'error', limit: 1000 })
    .filter((e) => e.message.includes('Plugin thrower') && e.message.includes(`${hook} hook tap failed`));

async function runOne(k: Kernel, d: Driver, task: string, maxRetries?: number): Promise<Action> {
  const pushed = await d.ctx!.queue.push({ task, source: 'test', actor: OPERATOR, ...(maxRetries !== undefined ? { maxRetries } : {}) });
  expect(pushed.task).toBe(task);
  return waitFor(() => {
    const a = k.queue.get(pushed.id);
    return a && (a.status === 'completed' || a.status === 'failed') ? a : undefined;
  }, `action "${task}" to settle`);
}

describe('contained hook taps', () => {
  it('covers a catalogue of hooks', () => {
    expect(HOOKS.length).toBeGreaterThanOrEqual(13);
  });

  for (const hook of HOOKS) {
    for (const mode of ['throw', 'reject'] as const) {
      it(`a tap that ${mode}s on ${hook} changes no outcome and is reported`, async () => {
        const calls = { n: 0 };
        const d: Driver = {};
        const k = await boot([driver(d), thrower(hook, mode, calls)], 100);
        expect(k.host.status('thrower')?.state).toBe('loaded');

        // Every hook fires at least once in this sequence: push, run (skill, emits), settle, amend, config change,
        // another plugin loading and unloading, another plugin quarantined.
        const task = `task for ${hook}`;
        const settled = await runOne(k, d, task);
        expect(settled).toMatchObject({ status: 'completed', result: `done: ${task}` });
        expect(settled.metadata.retries ?? 0).toBe(0);
        const all = k.queue.list();
        expect([...all.pending, ...all.completed, ...all.failed].filter((a) => a.task === task)).toHaveLength(1);

        if (hook === 'beforeSkill') {
          // A veto that cannot decide fails closed, naming the plugin.
          expect(d.skill).toMatchObject({ success: false, code: 'KEEL_E_SKILL_VETOED' });
          expect(d.skill!.result).toMatch(/plugin "thrower" failed.*refused/);
        } else {
          expect(d.skill).toMatchObject({ success: true, result: 'ok' });
        }
        expect(d.messageIn).toEqual(INBOUND);
        expect(d.messageOut).toEqual(OUTBOUND);

        // An action amended while it waits (held back a minute), then taken back: the amend holds, whatever the tap.
        const held = await d.ctx!.queue.push({
          task: 'held',
          source: 'test',
          actor: OPERATOR,
          metadata: { notBefore: Date.now() + 60_000 },
        });
        expect(await d.ctx!.queue.amend(held.id, { task: 'held, amended' })).toBe(true);
        expect(k.queue.get(held.id)?.task).toBe('held, amended');
        await d.ctx!.queue.cancel(held.id, 'test over');

        await k.config.set('queueCompletedLimit', 77, { kind: 'operator' });
        const other: PluginManifest = { id: 'other', version: '1.0.0', kind: 'service', description: 'comes and goes' };
        expect((await k.host.load(candidate(other, () => undefined))).state).toBe('loaded');
        await k.host.unload('other');
        for (let i = 0; i < 100; i++) {
          const s = await k.host.reportBroken({ id: 'broken', origin: 'user', dir: '/test/broken' }, 'does not compile');
          if (s.state === 'quarantined') break;
        }
        expect(k.host.status('broken')?.state).toBe('quarantined');
        await k.host.tapFailuresSettled();
        await waitFor(() => tapErrors(k, hook).length > 0, `the ${hook} tap failure to be logged`);

        expect(calls.n, `the ${hook} tap ran (add a trigger for a new hook above)`).toBeGreaterThan(0);
        expect(tapErrors(k, hook)[0]!.message).toContain(`tap of ${hook} broke`);
        expect(k.host.status('thrower')?.failures).toBeGreaterThan(0);
        expect(k.logs.recent({ limit: 1000 }).filter((e) => /Runner error/.test(e.message))).toEqual([]);
      });
    }
  }

  it('quarantines a plugin whose tap keeps failing, removes its taps and queues its repair; actions run on', async () => {
    const calls = { n: 0 };
    const d: Driver = {};
    const k = await boot([driver(d), thrower('actionStarted', 'throw', calls)], 3);
    for (let i = 1; i <= 3; i++) {
      expect(await runOne(k, d, `job ${i}`)).toMatchObject({ status: 'completed', result: `done: job ${i}` });
      await k.host.tapFailuresSettled();
      if (i < 3) expect(k.host.status('thrower')).toMatchObject({ state: 'loaded', failures: i });
    }
    expect(k.host.status('thrower')?.state).toBe('quarantined');
    expect(k.host.status('thrower')?.reason).toMatch(/actionStarted hook tap failed/);
    expect(tapOwners(k.hooks).has('thrower')).toBe(false);
    // The runner may be carrying the repair out right now; the driver's agent completes it at once.
    const repair = await waitFor(
      () => k.queue.list().completed.find((a) => (a.metadata.repair as { plugin?: string } | undefined)?.plugin === 'thrower'),
      'a repair action for the plugin',
    );
    expect(repair.result).toBe('repair noted');
    expect(await runOne(k, d, 'job 4')).toMatchObject({ status: 'completed' });
    expect(calls.n).toBe(3);
  });

  for (const hook of ['actionStarted', 'actionSettled'] as const) {
    it(`an action that fails for its own reason keeps that reason when a ${hook} tap throws`, async () => {
      const calls = { n: 0 };
      const d: Driver = {};
      const k = await boot([driver(d), thrower(hook, 'throw', calls)], 100);
      const failed = await runOne(k, d, 'fail: no luck', 0);
      expect(failed.status).toBe('failed');
      expect(JSON.stringify(failed)).toContain('own reason: fail: no luck');
      expect(JSON.stringify(failed)).not.toContain(`tap of ${hook} broke`);
      expect(calls.n).toBeGreaterThan(0);
      expect(k.logs.recent({ limit: 1000 }).filter((e) => /Runner error/.test(e.message))).toEqual([]);
    });
  }

  it('a push whose actionQueued tap throws is acknowledged once, so a client never retries into a duplicate', async () => {
    const calls = { n: 0 };
    const d: Driver = {};
    const k = await boot([driver(d), thrower('actionQueued', 'reject', calls)], 100);
    await k.runner!.stop();
    const a = await d.ctx!.queue.push({ task: 'exactly once', source: 'test', actor: OPERATOR });
    expect(a.status).toBe('pending');
    expect(k.queue.list().pending.map((p) => p.id)).toEqual([a.id]);
    expect(calls.n).toBe(1);
  });
});
