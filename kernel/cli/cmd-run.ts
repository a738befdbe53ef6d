/**
 * `keel run`: the agent in the foreground, or detached with --daemon (logs to $KEEL_HOME/daemon.log).
 * One runner per KEEL_HOME: a second `keel run` is refused while the first is alive.
 */
import { spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { join } from 'node:path';
import { ErrorCodes, KeelError } from '../errors.js';
import { keelHome } from '../paths.js';
import { isAlive, readPid, removePid, writePid } from './pidfiles.js';
import { writeRunState } from './run-state.js';

export interface RunOptions {
  daemon?: boolean;
  withGateway?: boolean;
  foregroundDaemon?: boolean;
  config?: string;
}

function refuseIfRunning(home: string): void {
  const rec = readPid(home, 'agent');
  if (rec && isAlive(rec.pid)) {
    throw new KeelError(ErrorCodes.ALREADY_RUNNING, `Keel is already running for ${home} (pid ${rec.pid}, ${rec.mode}). Stop it with \`keel stop\`.`);
  }
}

async function startDaemon(home: string, opts: RunOptions): Promise<number> {
  const log = join(home, 'daemon.log');
  const { mkdirSync } = await import('node:fs');
  mkdirSync(home, { recursive: true });
  const fd = openSync(log, 'a', 0o600);
  // Re-run this same entry point (dist/cli.js, or the source entry under a loader) with the same runtime flags.
  const args = [...process.execArgv, process.argv[1]!, ...(opts.config ? ['--config', opts.config] : []), 'run', '--foreground-daemon', ...(opts.withGateway ? ['--with-gateway'] : [])];
  const child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', fd, fd], env: process.env });
  child.unref();
  const exited = new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? 1)));
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const rec = readPid(home, 'agent');
    if (rec?.pid === child.pid) {
      process.stdout.write(`Keel is running in the background (pid ${child.pid}); logs: ${log}\n`);
      return 0;
    }
    const code = await Promise.race([exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 50))]);
    if (code !== undefined) {
      process.stderr.write(`keel: the daemon exited during start (code ${code}); see ${log}\n`);
      return 1;
    }
  }
  process.stderr.write(`keel: the daemon did not report ready within 20 s; see ${log}\n`);
  return 1;
}

export async function runCommand(opts: RunOptions): Promise<number> {
  const home = keelHome();
  refuseIfRunning(home);
  if (opts.daemon) return startDaemon(home, opts);

  process.setSourceMapsEnabled(true);
  const { startKernel, keelVersion } = await import('../kernel.js');
  const startedAt = new Date().toISOString();
  writePid(home, { pid: process.pid, name: 'agent', mode: opts.foregroundDaemon ? 'daemon' : 'foreground', startedAt, version: keelVersion() });
  let kernel: Awaited<ReturnType<typeof startKernel>>;
  try {
    kernel = await startKernel({
      home,
      ...(opts.config ? { configFile: opts.config } : {}),
      runAgent: true,
      ...(opts.withGateway ? { overrides: { gatewayAutoStart: true } } : {}),
    });
  } catch (e) {
    removePid(home, 'agent');
    throw e;
  }
  if (opts.withGateway && !kernel.host.isRunning('gateway')) {
    await kernel.stop();
    removePid(home, 'agent');
    throw new KeelError(ErrorCodes.PLUGIN_NOT_PROVIDED, '--with-gateway needs the gateway plugin, which is not installed or not enabled (see `keel plugins`).');
  }
  const publish = () =>
    writeRunState(home, {
      pid: process.pid,
      version: kernel.version,
      startedAt,
      updatedAt: new Date().toISOString(),
      runner: kernel.runner!.status(),
      queue: kernel.queue.counts(),
      plugins: kernel.host.statuses(),
      skills: [...kernel.registry.skills.values()].map((e) => ({
        name: e.manifest.name,
        plugin: e.plugin,
        category: e.manifest.category,
        description: e.manifest.description,
      })),
    });
  publish();
  const timer = setInterval(publish, 2000);
  const unsubscribe = kernel.queue.onChange(() => publish());
  kernel.log.info(`Keel ${kernel.version} is running (pid ${process.pid}, data in ${home}).`);

  await new Promise<void>((resolve) => {
    const shutdown = (sig: string) => {
      kernel.log.info(`Received ${sig}; stopping.`);
      resolve();
    };
    process.once('SIGINT', () => shutdown('SIGINT'));
    process.once('SIGTERM', () => shutdown('SIGTERM'));
  });
  clearInterval(timer);
  unsubscribe();
  await kernel.stop();
  publish();
  removePid(home, 'agent');
  return 0;
}
