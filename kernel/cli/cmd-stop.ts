/**
 * `keel stop`: SIGTERM to every live Keel process of this KEEL_HOME, SIGKILL after the timeout.
 */
import { progressLine } from '../../sdk/progress.js';
import { keelHome } from '../paths.js';
import { isAlive, livePids, runDir } from '../util/pidfiles.js';
import { rmSync } from 'node:fs';
import { join } from 'node:path';

export async function stop(opts: { json?: boolean; timeout: string }): Promise<number> {
  const home = keelHome();
  const procs = livePids(home);
  if (procs.length === 0) {
    if (opts.json) process.stdout.write(`${JSON.stringify({ stopped: [] })}\n`);
    else process.stdout.write('Keel is not running.\n');
    return 3;
  }
  const timeout = Math.max(0, Number(opts.timeout) || 10_000);
  for (const p of procs) {
    try {
      process.kill(p.pid, 'SIGTERM');
    } catch {
      // Already gone.
    }
  }
  const deadline = Date.now() + timeout;
  // A process finishing its action in flight can take seconds: show who is still stopping (terminal only).
  const waiting = () => procs.filter((p) => isAlive(p.pid));
  const line = await progressLine(`Stopping ${procs.map((p) => p.name).join(', ')}`, { quiet: Boolean(opts.json) });
  try {
    while (Date.now() < deadline && waiting().length) {
      line.update(
        `Stopping ${waiting()
          .map((p) => `${p.name} (pid ${p.pid})`)
          .join(', ')}; killed after ${Math.ceil((deadline - Date.now()) / 1000)} s`,
      );
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    line.stop();
  }
  const killed: number[] = [];
  for (const p of procs) {
    if (isAlive(p.pid)) {
      try {
        process.kill(p.pid, 'SIGKILL');
        killed.push(p.pid);
      } catch {
        // Gone in between.
      }
    }
    rmSync(join(runDir(home), `${p.name}.pid`), { force: true });
  }
  if (opts.json) {
    process.stdout.write(
      `${JSON.stringify({ stopped: procs.map((p) => ({ name: p.name, pid: p.pid, killed: killed.includes(p.pid) })) })}\n`,
    );
  } else {
    for (const p of procs) {
      process.stdout.write(`Stopped ${p.name} (pid ${p.pid})${killed.includes(p.pid) ? ' — killed after the timeout' : ''}\n`);
    }
  }
  return 0;
}
