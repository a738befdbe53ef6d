import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../kernel/kernel.js';
import { LogSink } from '../../kernel/log.js';
import { rm, skillEntry, tmp, writePlugin } from '../helpers.js';

let kernel: Kernel | undefined;
let dirs: string[] = [];
afterEach(async () => {
  await kernel?.stop();
  kernel = undefined;
  dirs.forEach(rm);
  dirs = [];
});

async function boot(config = ''): Promise<Kernel> {
  const home = tmp();
  const builtins = tmp('keel-builtins-');
  dirs.push(home, builtins);
  writeFileSync(join(home, 'keel.config.yaml'), config);
  writePlugin(builtins, {
    id: 'tools',
    manifest: {
      skills: [
        {
          name: 'add',
          description: 'adds',
          category: 'math',
          isParallelSafe: true,
          parameters: {
            type: 'object',
            required: ['a'],
            properties: { a: { type: 'number' }, b: { type: 'number', default: 10 } },
            additionalProperties: false,
          },
        },
        skillEntry('explode'),
        skillEntry('refuse'),
        skillEntry('run_command', { category: 'system' }),
        skillEntry('create_custom_skill', { category: 'system' }),
      ],
    },
    setup: `
      ctx.skills.register('add', ({ a, b }) => ({ sum: a + b }));
      ctx.skills.register('explode', () => { throw new Error('kaboom'); });
      ctx.skills.register('refuse', () => { throw Object.assign(new Error('not allowed here'), { code: 'KEEL_E_FORBIDDEN' }); });
      ctx.skills.register('run_command', ({ text }) => 'ran ' + text);
      ctx.skills.register('create_custom_skill', ({ text }) => 'created ' + text);
      ctx.hooks.tap('beforeSkill', (call) => call.args.text === 'veto-me' ? { reason: 'vetoed by tools' } : undefined);
      ctx.hooks.tap('afterSkill', (call, result) => { (globalThis.__after ??= []).push(call.name + ':' + result.success); });
    `,
  });
  const logs = new LogSink({ quiet: true });
  kernel = await startKernel({ home, builtinDir: builtins, env: {}, watchSkills: false, logs });
  return kernel;
}

describe('skill dispatch', () => {
  it('validates arguments, fills defaults, times the call and serialises objects', async () => {
    const k = await boot();
    const r = await k.execute('add', { a: 1 }, k.operator);
    expect(r.success).toBe(true);
    expect(JSON.parse(r.result)).toEqual({ sum: 11 });
    expect(r.executionTime).toBeGreaterThanOrEqual(0);
  });

  it('tells an unknown skill from invalid arguments', async () => {
    const k = await boot();
    const unknown = await k.execute('ad', { a: 1 }, k.operator);
    expect(unknown).toMatchObject({ success: false, code: 'KEEL_E_SKILL_UNKNOWN' });
    expect(unknown.result).toMatch(/Did you mean add/);
    const missing = await k.execute('add', {}, k.operator);
    expect(missing).toMatchObject({ success: false, code: 'KEEL_E_SKILL_INVALID_ARGS' });
    expect(missing.result).toMatch(/a is required/);
    const wrong = await k.execute('add', { a: 'one' }, k.operator);
    expect(wrong.result).toMatch(/a must be number/);
    const extra = await k.execute('add', { a: 1, c: 2 }, k.operator);
    expect(extra.result).toMatch(/c is not a known parameter/);
    const notObject = await k.execute('add', [1, 2], k.operator);
    expect(notObject.code).toBe('KEEL_E_SKILL_INVALID_ARGS');
  });

  it('reports a failing handler without throwing, and runs the hooks of the plugin', async () => {
    const k = await boot();
    const r = await k.execute('explode', { text: 'x' }, k.operator);
    expect(r).toMatchObject({ success: false, code: 'KEEL_E_SKILL_FAILED' });
    expect(r.result).toMatch(/kaboom/);
    const vetoed = await k.execute('explode', { text: 'veto-me' }, k.operator);
    expect(vetoed).toMatchObject({ success: false, code: 'KEEL_E_SKILL_VETOED', result: 'vetoed by tools' });
    expect((globalThis as { __after?: string[] }).__after).toContain('explode:false');
    // A plugin's coded refusal (sdk forbiddenError) keeps its code.
    expect(await k.execute('refuse', { text: 'x' }, k.operator)).toMatchObject({ success: false, code: 'KEEL_E_FORBIDDEN' });
  });

  it('blocks admin-only skills for non-admin channel users and logs the attempt', async () => {
    const k = await boot('adminUsers:\n  chatA: ["111"]\n');
    const stranger = await k.execute('run_command', { text: 'ls' }, { kind: 'user', channel: 'chatA', userId: '222' });
    expect(stranger.success).toBe(false);
    expect(stranger.code).toBe('KEEL_E_FORBIDDEN');
    expect(k.logs.recent({ level: 'warn' }).some((e) => /Blocked skill "run_command"/.test(e.message))).toBe(true);
    const admin = await k.execute('run_command', { text: 'ls' }, { kind: 'user', channel: 'chatA', userId: '111' });
    expect(admin).toMatchObject({ success: true, result: 'ran ls' });
    const otherChannel = await k.execute('run_command', { text: 'ls' }, { kind: 'user', channel: 'chatC', userId: '111' });
    expect(otherChannel.success).toBe(false);
  });

  it('blocks run_command and create_custom_skill in safe mode, even for the operator', async () => {
    const k = await boot('safeMode: true\n');
    expect((await k.execute('run_command', { text: 'ls' }, k.operator)).code).toBe('KEEL_E_SAFE_MODE');
    expect((await k.execute('create_custom_skill', { text: 'x' }, k.operator)).code).toBe('KEEL_E_SAFE_MODE');
    expect((await k.execute('add', { a: 1 }, k.operator)).success).toBe(true);
  });
});

describe('hooks', () => {
  it('are one frozen catalogue; every tap carries its plugin id and goes away with the plugin', async () => {
    const k = await boot();
    expect(Object.isFrozen(k.hooks)).toBe(true);
    expect(() => {
      (k.hooks as unknown as Record<string, unknown>).myHook = 1;
    }).toThrow();
    expect(k.hooks.beforeSkill.taps.map((t) => t.name)).toEqual(['tools']);
    await k.host.unload('tools');
    expect(k.hooks.beforeSkill.taps).toHaveLength(0);
    expect(k.hooks.afterSkill.taps).toHaveLength(0);
    expect((await k.execute('add', { a: 1 }, k.operator)).code).toBe('KEEL_E_SKILL_UNKNOWN');
  });

  it('lets plugins fire only the hooks they may emit', async () => {
    const home = tmp();
    const builtins = tmp('keel-builtins-');
    dirs.push(home, builtins);
    writePlugin(builtins, {
      id: 'thinker',
      setup: `
        ctx.emit('thinking', { thought: 'hmm' });
        try { ctx.emit('actionQueued', {}); } catch (e) { globalThis.__emitRefused = e.message; }
        globalThis.__rewritten = await ctx.emit('messageIn', { channel: 'chatA', userId: '1', text: 'hi' });
      `,
    });
    writePlugin(builtins, {
      id: 'listener',
      setup: `
        ctx.hooks.tap('thinking', (e) => { (globalThis.__thoughts ??= []).push(e.thought); });
        ctx.hooks.tap('messageIn', (m) => ({ ...m, text: m.text.toUpperCase() }));
      `,
      manifest: { provides: ['listening'] },
    });
    // The thinker requires what the listener provides, so the listener's taps exist before the thinker emits.
    const fs = await import('node:fs');
    fs.renameSync(join(builtins, 'thinker'), join(builtins, 'zz-thinker'));
    const m = JSON.parse(fs.readFileSync(join(builtins, 'zz-thinker', 'manifest.json'), 'utf8'));
    fs.writeFileSync(join(builtins, 'zz-thinker', 'manifest.json'), JSON.stringify({ ...m, requires: ['listening'] }));
    kernel = await startKernel({ home, builtinDir: builtins, env: {}, watchSkills: false, logs: new LogSink({ quiet: true }) });
    const g = globalThis as { __thoughts?: string[]; __emitRefused?: string; __rewritten?: { text: string } };
    expect(g.__thoughts).toEqual(['hmm']);
    expect(g.__emitRefused).toMatch(/belongs to the kernel/);
    expect(g.__rewritten?.text).toBe('HI');
  });
});
