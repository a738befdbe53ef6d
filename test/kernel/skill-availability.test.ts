/**
 * `ctx.skills.register(name, handler, { available })`: a skill whose `available` does not return true is left out of
 * `ctx.skills.list()` (what the agent's catalogue and the gateway's skill list are built from), comes back as
 * soon as it returns true, is still callable (its handler explains), and `list({ includeUnavailable })` shows it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../kernel/kernel.js';
import { LogSink } from '../../kernel/log.js';
import { rm, skillEntry, tmp, writePlugin } from '../helpers.js';

let kernel: Kernel | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await kernel?.stop();
  kernel = undefined;
  for (const d of dirs.splice(0)) rm(d);
});

describe('skill availability', () => {
  it('leaves an unavailable skill out of list() until it becomes available', async () => {
    const home = tmp();
    const builtins = tmp('keel-builtins-');
    dirs.push(home, builtins);
    writeFileSync(join(home, 'keel.config.yaml'), '');
    writePlugin(builtins, {
      id: 'avail',
      manifest: { skills: [skillEntry('needs_key'), skillEntry('broken_check'), skillEntry('lister'), skillEntry('toggle')] },
      setup: `
        let on = false;
        ctx.skills.register('needs_key', () => 'no key: set fooKey', { available: () => (on ? true : 'fooKey is not set') });
        ctx.skills.register('broken_check', () => 'x', { available: () => { throw new Error('boom'); } });
        ctx.skills.register('toggle', () => { on = !on; return String(on); });
        ctx.skills.register('lister', ({ text }) => ctx.skills.list(text === 'all' ? { includeUnavailable: true } : undefined).map((s) => s.name).sort().join(','));
      `,
    });
    kernel = await startKernel({ home, builtinDir: builtins, env: {}, watchSkills: false, logs: new LogSink({ quiet: true }) });
    const op = kernel.operator;
    const names = async (text = '') => (await kernel!.execute('lister', { text }, op)).result.split(',');
    expect(await names()).not.toContain('needs_key');
    expect(await names()).not.toContain('broken_check'); // a throwing check counts as unavailable
    expect(await names()).toContain('lister');
    expect(await names('all')).toEqual(expect.arrayContaining(['needs_key', 'broken_check']));
    expect((await kernel.execute('needs_key', { text: '' }, op)).result).toBe('no key: set fooKey');
    await kernel.execute('toggle', { text: '' }, op);
    expect(await names()).toContain('needs_key');
  });
});
