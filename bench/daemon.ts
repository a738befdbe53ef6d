/**
 * Idle memory of the daemon (`keel run`, every built-in plugin loaded, no channel configured) against a bare
 * idle Node process, measured in the same run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { printRows, type BenchRow } from './lib.js';

const CLI = join(import.meta.dirname, '..', 'dist', 'cli.js');

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function settle(child: ChildProcess, ready: () => boolean): Promise<number> {
  const deadline = Date.now() + 20_000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error('process did not become ready');
    await new Promise((r) => setTimeout(r, 50));
  }
  await new Promise((r) => setTimeout(r, 2000)); // let start-up garbage be collected
  const rss = rssMb(child.pid!);
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  return rss;
}

export async function benchDaemon(): Promise<BenchRow[]> {
  const home = mkdtempSync(join(tmpdir(), 'keel-bench-daemon-'));
  try {
    const bare = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30); console.log("ready")'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let bareReady = false;
    bare.stdout!.on('data', () => (bareReady = true));
    const peer = await settle(bare, () => bareReady);
    const daemon = spawn(process.execPath, [CLI, 'run'], { env: { ...process.env, KEEL_HOME: home }, stdio: 'ignore' });
    const rss = await settle(daemon, () => existsSync(join(home, 'run', 'state.json')));
    return [
      {
        name: 'daemon idle RSS (keel run, built-in plugins)',
        value: rss,
        unit: 'MB',
        peer: 'idle node process',
        peerValue: peer,
        budget: '<= 120 MB',
        ok: rss <= 120,
      },
    ];
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) printRows(await benchDaemon());
