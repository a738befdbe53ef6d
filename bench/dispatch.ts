/**
 * Skill dispatch overhead (schema validation + policy + hooks + timing) against calling the handler directly.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startKernel } from '../kernel/kernel.js';
import { LogSink } from '../kernel/log.js';
import { writePlugin } from '../test/helpers.js';
import { printRows, type BenchRow } from './lib.js';

export async function benchDispatch(iterations = 50_000): Promise<BenchRow[]> {
  const home = mkdtempSync(join(tmpdir(), 'keel-bench-dispatch-'));
  const builtins = mkdtempSync(join(tmpdir(), 'keel-bench-builtins-'));
  writePlugin(builtins, {
    id: 'bench',
    manifest: {
      skills: [
        {
          name: 'add',
          description: 'adds two numbers',
          category: 'bench',
          parameters: {
            type: 'object',
            required: ['a', 'b'],
            properties: { a: { type: 'number' }, b: { type: 'number' } },
            additionalProperties: false,
          },
        },
      ],
    },
    setup: `ctx.skills.register('add', ({ a, b }) => a + b); ctx.hooks.tap('afterSkill', () => undefined);`,
  });
  const kernel = await startKernel({ home, builtinDir: builtins, env: {}, watchSkills: false, logs: new LogSink({ quiet: true }) });
  try {
    const handler = (args: { a: number; b: number }) => args.a + args.b;
    const direct = async (args: { a: number; b: number }) => String(await handler(args));
    const actor = kernel.operator;
    for (let i = 0; i < 5000; i++) {
      await kernel.execute('add', { a: i, b: 1 }, actor);
      await direct({ a: i, b: 1 });
    }
    let t = performance.now();
    for (let i = 0; i < iterations; i++) await direct({ a: i, b: 1 });
    const directUs = ((performance.now() - t) * 1000) / iterations;
    t = performance.now();
    for (let i = 0; i < iterations; i++) await kernel.execute('add', { a: i, b: 1 }, actor);
    const dispatchUs = ((performance.now() - t) * 1000) / iterations;
    const overhead = dispatchUs - directUs;
    return [
      {
        name: 'skill dispatch overhead',
        value: overhead,
        unit: 'µs',
        peer: 'direct async call',
        peerValue: directUs,
        budget: '<= 50 µs',
        ok: overhead <= 50,
      },
    ];
  } finally {
    await kernel.stop();
    rmSync(home, { recursive: true, force: true });
    rmSync(builtins, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) printRows(await benchDispatch());
