/**
 * Custom skill hot reload: median time from writing a skill file to the new version answering through
 * `kernel.execute`, beside an esbuild build of the same file alone (the floor any reload pays).
 * Standalone: `npx tsx bench/hot-reload.ts`.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { startKernel } from '../kernel/kernel.js';
import { LogSink } from '../kernel/log.js';
import { type BenchRow, median, printRows } from './lib.js';

const SAVES = 10;
const BUDGET_MS = 300;

function source(version: number): string {
  return [
    `import { defineSkill, Type } from 'keel/sdk';`,
    `export default defineSkill({`,
    `  name: 'bench_echo',`,
    `  description: 'Hot reload benchmark skill',`,
    `  parameters: Type.Object({ text: Type.String() }),`,
    `  run: ({ text }) => 'v${version}:' + text,`,
    `});`,
    '',
  ].join('\n');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** esbuild alone on the same file, with the same bundling and `keel/sdk` left external, as a reload does. */
async function esbuildAlone(file: string): Promise<number> {
  const { build } = await import('esbuild');
  const t0 = performance.now();
  await build({
    entryPoints: [file],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    logLevel: 'silent',
    external: ['keel/sdk'],
  });
  return performance.now() - t0;
}

export async function benchHotReload(): Promise<BenchRow[]> {
  const home = await mkdtemp(join(tmpdir(), 'keel-bench-reload-'));
  const builtinDir = join(home, 'no-builtins');
  await mkdir(join(home, 'skills'), { recursive: true });
  await mkdir(builtinDir, { recursive: true });
  const file = join(home, 'skills', 'bench-echo.ts');
  await writeFile(file, source(0));
  const kernel = await startKernel({ home, builtinDir, watchSkills: true, env: {}, logs: new LogSink({ quiet: true }) });
  const saves: number[] = [];
  const builds: number[] = [];
  try {
    const call = () => kernel.execute('bench_echo', { text: 'x' }, kernel.operator);
    if ((await call()).result !== 'v0:x') throw new Error('the benchmark skill did not load at start');
    // Warm esbuild's service so the first save is not billed for spawning it (a running daemon has it warm too).
    await esbuildAlone(file);
    for (let v = 1; v <= SAVES; v++) {
      const t0 = performance.now();
      await writeFile(file, source(v));
      const want = `v${v}:x`;
      for (;;) {
        if ((await call()).result === want) break;
        if (performance.now() - t0 > 10_000) throw new Error(`save ${v} was not callable after 10 s`);
        await sleep(1);
      }
      saves.push(performance.now() - t0);
      await kernel.customSkills?.whenIdle();
      builds.push(await esbuildAlone(file));
      // Let the watcher settle so one save's events never fold into the next.
      await sleep(50);
    }
  } finally {
    await kernel.stop();
    await rm(home, { recursive: true, force: true });
  }
  const value = median(saves);
  return [
    {
      name: `custom skill hot reload, save to callable (median of ${SAVES})`,
      value,
      unit: 'ms',
      peer: 'esbuild build of the same file alone',
      peerValue: median(builds),
      budget: `<= ${BUDGET_MS} ms`,
      ok: value <= BUDGET_MS,
    },
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  printRows(await benchHotReload());
}
