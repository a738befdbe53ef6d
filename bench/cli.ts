/**
 * Cold start of `keel push` and `keel --help` against `node -e 0`, measured in the same run.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { median, printRows, type BenchRow } from './lib.js';

const CLI = join(import.meta.dirname, '..', 'dist', 'cli.js');

function time(args: string[], env: NodeJS.ProcessEnv, runs: number): number {
  const xs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    execFileSync(process.execPath, args, { env, stdio: 'ignore' });
    xs.push(performance.now() - t);
  }
  return median(xs);
}

export async function benchCli(runs = 15): Promise<BenchRow[]> {
  const home = mkdtempSync(join(tmpdir(), 'keel-bench-cli-'));
  const env = { ...process.env, KEEL_HOME: home };
  try {
    time(['-e', '0'], env, 3); // warm the file cache
    time([CLI, '--help'], env, 3);
    const node = time(['-e', '0'], env, runs);
    const push = time([CLI, 'push', 'benchmark task', '-p', '7'], env, runs);
    const help = time([CLI, '--help'], env, runs);
    return [
      {
        name: 'keel push cold start',
        value: push,
        unit: 'ms',
        peer: 'node -e 0',
        peerValue: node,
        budget: '<= 2.5x peer',
        ok: push <= 2.5 * node,
      },
      { name: 'keel --help', value: help, unit: 'ms', peer: 'node -e 0', peerValue: node, budget: '<= 2.5x peer', ok: help <= 2.5 * node },
    ];
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) printRows(await benchCli());
