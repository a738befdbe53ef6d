/**
 * run_command of `echo` through the kernel, in the deny-list jail (private mount and pid namespace with the
 * stubs; plugins/system/src/deny-jail.ts), against a plain execFile of the same command in the same run; and the
 * same run_command with commandIsolation off, to show what the jail itself costs. Budget (issue 15): well under
 * 100 ms per command.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startKernel } from '../kernel/kernel.js';
import { LogSink } from '../kernel/log.js';
import { discoverBuiltins } from '../kernel/plugins/discover.js';
import { median, printRows, type BenchRow } from './lib.js';

const ROOT = join(import.meta.dirname, '..');

async function times(n: number, f: () => Promise<unknown>): Promise<number> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await f();
    out.push(performance.now() - t);
  }
  return median(out);
}

export async function benchCommands(iterations = 40): Promise<BenchRow[]> {
  const system = (await discoverBuiltins(join(ROOT, 'plugins'))).find((c) => c.id === 'system');
  const homes: string[] = [];
  const boot = async (commandIsolation: string) => {
    const home = mkdtempSync(join(tmpdir(), 'keel-bench-commands-'));
    const empty = mkdtempSync(join(tmpdir(), 'keel-bench-empty-'));
    homes.push(home, empty);
    mkdirSync(join(home, 'work'));
    return startKernel({
      home,
      env: {},
      watchSkills: false,
      logs: new LogSink({ quiet: true }),
      builtinDir: empty,
      builtinOnly: true,
      extraPlugins: [system!],
      overrides: { commandWorkingDir: join(home, 'work'), autoExecuteCommands: true, commandIsolation },
    });
  };
  const jailed = await boot('auto');
  const strictJail = await boot('strict');
  const bare = await boot('off');
  try {
    const run = (k: typeof jailed) => async () => {
      const r = await k.execute('run_command', { command: 'echo', args: ['hi'] }, k.operator);
      if (!r.result.includes('hi')) throw new Error(`run_command echo failed: ${r.result}`);
      return r;
    };
    const isolated = (await run(jailed)()).result.includes('Isolation: on');
    const plain = () => new Promise<void>((resolve, reject) => execFile('echo', ['hi'], (e) => (e ? reject(e) : resolve())));
    for (let i = 0; i < 5; i++) await Promise.all([run(jailed)(), run(bare)(), plain()]);
    const peer = await times(iterations, plain);
    const inJail = await times(iterations, run(jailed));
    const inStrict = isolated ? await times(iterations, run(strictJail)) : NaN;
    const noJail = await times(iterations, run(bare));
    return [
      {
        name: `run_command echo, ${isolated ? 'in the deny-list jail' : 'NOT isolated here (no namespaces)'}`,
        value: inJail,
        unit: 'ms',
        peer: 'execFile echo',
        peerValue: peer,
        budget: '< 100 ms',
        ok: inJail < 100,
      },
      ...(isolated
        ? [
            {
              name: 'run_command echo, commandIsolation strict',
              value: inStrict,
              unit: 'ms',
              peer: 'execFile echo',
              peerValue: peer,
              budget: '< 100 ms',
              ok: inStrict < 100,
            },
          ]
        : []),
      {
        name: 'run_command echo, commandIsolation off',
        value: noJail,
        unit: 'ms',
        peer: 'execFile echo',
        peerValue: peer,
        budget: '< 100 ms',
        ok: noJail < 100,
      },
    ];
  } finally {
    await jailed.stop();
    await strictJail.stop();
    await bare.stop();
    for (const h of homes) rmSync(h, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) printRows(await benchCommands());
