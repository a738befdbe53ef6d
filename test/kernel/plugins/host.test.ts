import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { rm, skillEntry, tmp, writePlugin } from '../../helpers.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function boot(opts: {
  plugins: Parameters<typeof writePlugin>[1][];
  config?: string;
  quarantineAfter?: number;
  setupTimeoutMs?: number;
}) {
  const home = tmp();
  const builtins = tmp('keel-builtins-');
  for (const p of opts.plugins) writePlugin(builtins, p);
  if (opts.config) writeFileSync(join(home, 'keel.config.yaml'), opts.config);
  const kernel = await startKernel({
    home,
    builtinDir: builtins,
    env: {},
    watchSkills: false,
    logs: new LogSink({ quiet: true }),
    host: {
      quarantineAfter: opts.quarantineAfter ?? 3,
      setupTimeoutMs: opts.setupTimeoutMs ?? 2000,
      stopTimeoutMs: 1000,
      healthTimeoutMs: 500,
    },
  });
  cleanups.push(async () => {
    await kernel.stop();
    rm(home);
    rm(builtins);
  });
  return kernel;
}

const state = (k: Kernel, id: string) => k.host.status(id)?.state;

describe('plugin host', () => {
  it('loads built-ins, registers their skills and runs them through dispatch', async () => {
    const k = await boot({
      plugins: [
        {
          id: 'alpha',
          manifest: { skills: [skillEntry('shout')] },
          setup: `ctx.skills.register('shout', ({ text }) => text.toUpperCase());`,
        },
      ],
    });
    expect(state(k, 'alpha')).toBe('loaded');
    const r = await k.execute('shout', { text: 'hi' }, k.operator);
    expect(r).toMatchObject({ success: true, result: 'HI' });
    expect(typeof r.executionTime).toBe('number');
  });

  it('applies pluginDenyList and pluginAllowList to built-ins (deny wins)', async () => {
    const plugins = ['a', 'b', 'c'].map((id) => ({
      id,
      manifest: { skills: [skillEntry(`s_${id}`)] },
      setup: `ctx.skills.register('s_${id}', () => '${id}');`,
    }));
    const k = await boot({ plugins, config: 'pluginAllowList: [a, b]\npluginDenyList: [b]\n' });
    expect(state(k, 'a')).toBe('loaded');
    expect(state(k, 'b')).toBe('disabled');
    expect(k.host.status('b')?.reason).toMatch(/pluginDenyList/);
    expect(state(k, 'c')).toBe('disabled');
    expect(k.host.status('c')?.reason).toMatch(/pluginAllowList/);
    expect((await k.execute('s_c', { text: 'x' }, k.operator)).code).toBe('KEEL_E_SKILL_UNKNOWN');
  });

  it('refuses an invalid manifest before running any plugin code', async () => {
    const k = await boot({
      plugins: [{ id: 'bad', manifest: { kind: 'nonsense' }, setup: `throw new Error('must not run');` }],
    });
    expect(state(k, 'bad')).toBe('invalid');
    expect(k.host.status('bad')?.code).toBe('KEEL_E_MANIFEST_INVALID');
    expect(k.host.status('bad')?.reason).toMatch(/kind/);
  });

  it('keeps the kernel up when a plugin throws in setup, and quarantines it after repeated failures with a repair action', async () => {
    const k = await boot({
      plugins: [
        { id: 'broken', setup: `throw new Error('boom in setup');` },
        { id: 'fine', manifest: { skills: [skillEntry('ok_skill')] }, setup: `ctx.skills.register('ok_skill', () => 'ok');` },
      ],
      quarantineAfter: 2,
    });
    expect(state(k, 'broken')).toBe('failed');
    expect(k.host.status('broken')?.reason).toMatch(/boom in setup/);
    expect(state(k, 'fine')).toBe('loaded');
    await k.host.checkHealth(); // another setup attempt, fails again
    expect(state(k, 'broken')).toBe('quarantined');
    const repair = k.queue.list().pending.find((a) => (a.metadata as { repair?: { plugin: string } }).repair?.plugin === 'broken');
    expect(repair?.task).toMatch(/self_repair_skill/);
    expect((await k.execute('ok_skill', { text: 'x' }, k.operator)).result).toBe('ok');
  });

  it('does not count a failure caused by its surroundings (port in use) towards quarantine, and retries it', async () => {
    const k = await boot({
      plugins: [
        {
          id: 'needs-port',
          setup: `globalThis.__portTries = (globalThis.__portTries ?? 0) + 1; if (globalThis.__portTries < 4) { throw Object.assign(new Error('Port 1 is already in use'), { code: 'KEEL_E_PLUGIN_ENVIRONMENT' }); }`,
        },
      ],
      quarantineAfter: 2,
    });
    expect(state(k, 'needs-port')).toBe('failed');
    await k.host.checkHealth();
    await k.host.checkHealth();
    expect(state(k, 'needs-port')).toBe('failed');
    expect(k.host.status('needs-port')?.failures).toBe(0);
    await k.host.checkHealth(); // the fourth attempt succeeds
    expect(state(k, 'needs-port')).toBe('loaded');
  });

  it('times out a plugin that hangs in setup and shuts its context', async () => {
    const k = await boot({
      plugins: [
        {
          id: 'hang',
          manifest: { skills: [skillEntry('late')] },
          setup: `await new Promise((r) => setTimeout(r, 1500)); try { ctx.skills.register('late', () => 'late'); } catch (e) { globalThis.__lateError = e.message; }`,
        },
      ],
      setupTimeoutMs: 300,
    });
    expect(state(k, 'hang')).toBe('failed');
    expect(k.host.status('hang')?.code).toBe('KEEL_E_PLUGIN_TIMEOUT');
    await new Promise((r) => setTimeout(r, 1400));
    expect((globalThis as { __lateError?: string }).__lateError).toMatch(/stopped/);
    expect((await k.execute('late', { text: 'x' }, k.operator)).success).toBe(false);
  });

  it('stops a plugin whose setup finishes after its time was up: what it opened is not left running unowned', async () => {
    const k = await boot({
      plugins: [
        {
          id: 'slow',
          manifest: {},
          setup: `await new Promise((r) => setTimeout(r, 800)); const timer = setInterval(() => { globalThis.__slowTicks = (globalThis.__slowTicks ?? 0) + 1; }, 20); return { stop() { clearInterval(timer); globalThis.__slowStopped = true; } };`,
        },
      ],
      setupTimeoutMs: 200,
    });
    expect(k.host.status('slow')?.code).toBe('KEEL_E_PLUGIN_TIMEOUT');
    const g = globalThis as { __slowStopped?: boolean; __slowTicks?: number };
    await expect.poll(() => g.__slowStopped, { timeout: 5000 }).toBe(true);
    const ticks = g.__slowTicks ?? 0;
    await new Promise((r) => setTimeout(r, 200));
    expect(g.__slowTicks ?? 0).toBe(ticks);
  });

  it('quarantines a plugin whose health check fails repeatedly and stops it', async () => {
    const k = await boot({
      plugins: [
        {
          id: 'sick',
          manifest: { skills: [skillEntry('sick_skill')] },
          setup: `ctx.skills.register('sick_skill', () => 'alive'); let n = 0; return { health() { n++; return n === 1 ? { ok: true } : { ok: false, message: 'database gone' }; }, stop() { globalThis.__sickStopped = true; } };`,
        },
      ],
      quarantineAfter: 2,
    });
    await k.host.checkHealth(); // ok
    expect(state(k, 'sick')).toBe('loaded');
    await k.host.checkHealth(); // fail 1
    expect(state(k, 'sick')).toBe('loaded');
    expect(k.host.status('sick')?.failures).toBe(1);
    await k.host.checkHealth(); // fail 2: quarantined
    expect(state(k, 'sick')).toBe('quarantined');
    expect(k.host.status('sick')?.reason).toMatch(/database gone/);
    expect((globalThis as { __sickStopped?: boolean }).__sickStopped).toBe(true);
    expect((await k.execute('sick_skill', { text: 'x' }, k.operator)).code).toBe('KEEL_E_SKILL_UNKNOWN');
    expect(k.queue.list().pending.some((a) => /Repair plugin "sick"/.test(a.task))).toBe(true);
  });

  it('detects a dependency cycle and a missing requirement with coded errors', async () => {
    const k = await boot({
      plugins: [
        { id: 'p1', manifest: { requires: ['cap2'], provides: ['cap1'] } },
        { id: 'p2', manifest: { requires: ['cap1'], provides: ['cap2'] } },
        { id: 'p3', manifest: { requires: ['nothing-provides-this'] } },
        { id: 'p4', manifest: { requires: ['cap5'] } },
        { id: 'p5', manifest: { provides: ['cap5'] } },
      ],
    });
    expect(k.host.status('p1')?.code).toBe('KEEL_E_PLUGIN_CYCLE');
    expect(k.host.status('p2')?.code).toBe('KEEL_E_PLUGIN_CYCLE');
    expect(k.host.status('p3')?.code).toBe('KEEL_E_PLUGIN_MISSING_REQUIREMENT');
    expect(state(k, 'p4')).toBe('loaded');
    expect(state(k, 'p5')).toBe('loaded');
  });

  it('refuses a skill name that another plugin already owns', async () => {
    const k = await boot({
      plugins: [
        { id: 'first', manifest: { skills: [skillEntry('same')] }, setup: `ctx.skills.register('same', () => 'first');` },
        { id: 'second', manifest: { skills: [skillEntry('same')] }, setup: `ctx.skills.register('same', () => 'second');` },
      ],
    });
    expect(state(k, 'first')).toBe('loaded');
    expect(k.host.status('second')?.code).toBe('KEEL_E_SKILL_DUPLICATE');
    expect((await k.execute('same', { text: 'x' }, k.operator)).result).toBe('first');
  });

  it('starts plugins in requires order and stops them in reverse', async () => {
    const k = await boot({
      plugins: [
        {
          id: 'zz-consumer',
          manifest: { requires: ['store'] },
          setup: `(globalThis.__order ??= []).push('start consumer'); return { stop() { globalThis.__order.push('stop consumer'); } };`,
        },
        {
          id: 'aa-provider',
          manifest: { provides: ['store'] },
          setup: `(globalThis.__order ??= []).push('start provider'); return { stop() { globalThis.__order.push('stop provider'); } };`,
        },
      ],
    });
    await k.stop();
    expect((globalThis as { __order?: string[] }).__order).toEqual(['start provider', 'start consumer', 'stop consumer', 'stop provider']);
  });
});
