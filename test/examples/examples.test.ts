/**
 * The examples work as the README says: copied into a KEEL_HOME, the custom skill and the user plugin load,
 * run, and the plugin's config key has its default and follows its environment variable.
 */
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../kernel/kernel.js';
import { LogSink } from '../../kernel/log.js';

const examples = join(import.meta.dirname, '..', '..', 'examples');
const cleanup: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function kernelWithExamples(env: NodeJS.ProcessEnv): Promise<Kernel> {
  const home = await mkdtemp(join(tmpdir(), 'keel-examples-home-'));
  const builtinDir = await mkdtemp(join(tmpdir(), 'keel-examples-builtin-'));
  cleanup.push(
    () => rm(home, { recursive: true, force: true }),
    () => rm(builtinDir, { recursive: true, force: true }),
  );
  await cp(join(examples, 'skills', 'word-count.ts'), join(home, 'skills', 'word-count.ts'));
  await cp(join(examples, 'plugins', 'greeter'), join(home, 'plugins', 'greeter'), { recursive: true });
  const kernel = await startKernel({ home, builtinDir, watchSkills: true, env, logs: new LogSink({ quiet: true }) });
  cleanup.push(() => kernel.stop());
  return kernel;
}

describe('examples', () => {
  it('runs the word_count custom skill and the greeter plugin with its default greeting', async () => {
    const kernel = await kernelWithExamples({});
    expect(kernel.host.status('skill-word-count')).toMatchObject({ state: 'loaded', origin: 'custom-skill' });
    expect(kernel.host.status('greeter')).toMatchObject({ state: 'loaded', origin: 'user' });

    const wc = await kernel.execute('word_count', { text: 'one two two\nthree', top: 1 }, kernel.operator);
    expect(wc.success).toBe(true);
    expect(JSON.parse(wc.result)).toEqual({ words: 4, lines: 2, characters: 17, frequent: [['two', 2]] });
    expect((await kernel.execute('word_count', { text: 7 }, kernel.operator)).code).toBe('KEEL_E_SKILL_INVALID_ARGS');

    expect(kernel.config.get('greeterGreeting')).toBe('Hello');
    expect(await kernel.execute('greet', { name: 'Ada' }, kernel.operator)).toMatchObject({ success: true, result: 'Hello, Ada!' });
    expect((await kernel.execute('greet', {}, kernel.operator)).code).toBe('KEEL_E_SKILL_INVALID_ARGS');
  });

  it("takes the greeting from the plugin's environment variable", async () => {
    const kernel = await kernelWithExamples({ GREETER_GREETING: 'Ahoy' });
    expect(kernel.config.get('greeterGreeting')).toBe('Ahoy');
    expect((await kernel.execute('greet', { name: 'Ada' }, kernel.operator)).result).toBe('Ahoy, Ada!');
  });
});
