/**
 * A long-running Keel process (`keel run`, `keel gateway`, ...): pid file, kernel, published state, signals.
 * One agent runner per KEEL_HOME: asking for the agent while another process runs it is refused.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { listChannels } from '../../sdk/channel.js';
import { ErrorCodes, KeelError } from '../errors.js';
import type { Kernel, KernelOptions } from '../kernel.js';
import { readPid, removePid, writePid } from '../util/pidfiles.js';
import { isPidAlive } from '../util/pid.js';
import { type McpServerState, writeRunState } from './run-state.js';

export interface ServeOptions {
  home: string;
  /** Pid file name under run/ (`agent`, `gateway`). */
  processName: string;
  mode: 'foreground' | 'daemon' | 'background';
  runAgent: boolean;
  configFile?: string;
  overrides?: Record<string, unknown>;
  kernel?: Partial<KernelOptions>;
}

export interface Served {
  kernel: Kernel;
  /** Resolves after SIGINT/SIGTERM (or stop()) once everything is stopped and the pid files are gone. */
  done: Promise<void>;
  stop(): Promise<void>;
}

export function refuseIfAgentRunning(home: string): void {
  const rec = readPid(home, 'agent');
  if (rec && rec.pid !== process.pid && isPidAlive(rec.pid)) {
    throw new KeelError(
      ErrorCodes.ALREADY_RUNNING,
      `The Keel agent is already running for ${home} (pid ${rec.pid}, ${rec.mode}). Stop it with \`keel stop\`.`,
    );
  }
}

export async function serve(o: ServeOptions): Promise<Served> {
  if (o.runAgent) refuseIfAgentRunning(o.home);
  const existing = readPid(o.home, o.processName);
  if (existing && existing.pid !== process.pid && isPidAlive(existing.pid)) {
    throw new KeelError(
      ErrorCodes.ALREADY_RUNNING,
      `Keel's ${o.processName} is already running for ${o.home} (pid ${existing.pid}). Stop it with \`keel stop\`.`,
    );
  }
  process.setSourceMapsEnabled(true);
  const { startKernel, keelVersion } = await import('../kernel.js');
  const startedAt = new Date().toISOString();
  const names = o.runAgent && o.processName !== 'agent' ? [o.processName, 'agent'] : [o.processName];
  const record = (ready: boolean, gateway?: string) => {
    for (const name of names)
      writePid(o.home, { pid: process.pid, name, mode: o.mode, startedAt, version: keelVersion(), ready, ...(gateway ? { gateway } : {}) });
  };
  record(false);
  const cleanup = () => names.forEach((n) => removePid(o.home, n));
  let kernel: Kernel;
  try {
    // Set by detach for the child only: read once and kept from what this process starts (commands, tools).
    const logFile = process.env.KEEL_LOG_FILE;
    delete process.env.KEEL_LOG_FILE;
    if (logFile) {
      // What earlier runs left past logFileMaxMB moves to <log>.1 before this run writes its first line.
      const { logLimitBeforeStart, rotateInPlace } = await import('../housekeeping.js');
      try {
        rotateInPlace(logFile, await logLimitBeforeStart(o.home, o.configFile));
      } catch {
        // the kernel's housekeeping tries again and logs why it cannot
      }
    }
    kernel = await startKernel({
      home: o.home,
      ...(logFile ? { logFile } : {}),
      ...(o.configFile ? { configFile: o.configFile } : {}),
      runAgent: o.runAgent,
      ...(o.overrides ? { overrides: o.overrides } : {}),
      ...o.kernel,
    });
  } catch (e) {
    cleanup();
    throw e;
  }
  const mcpServers = (): { mcpServers?: McpServerState[] } => {
    try {
      const list = kernel.registry.use<{ list(): McpServerState[] }>('mcp:servers')?.list();
      return list?.length ? { mcpServers: list } : {};
    } catch {
      return {};
    }
  };
  const publish = () => {
    if (!o.runAgent) return;
    writeRunState(o.home, {
      pid: process.pid,
      version: kernel.version,
      startedAt,
      updatedAt: new Date().toISOString(),
      runner: kernel.runner?.status() ?? { state: 'stopped' },
      queue: kernel.queue.counts(),
      plugins: kernel.host.statuses(),
      skills: [...kernel.registry.skills.values()].map((e) => ({
        name: e.manifest.name,
        plugin: e.plugin,
        category: e.manifest.category,
        description: e.manifest.description,
      })),
      channels: listChannels({ capabilities: (prefix) => kernel.registry.withPrefix(prefix) }),
      ...mcpServers(),
    });
  };
  publish();
  // `keel status` tells where the gateway (and its dashboard) of this process listens
  record(true, kernel.registry.use<{ url: string }>('gateway:address')?.url);
  const timer = setInterval(publish, 2000);
  timer.unref();
  const unsubscribe = kernel.queue.onChange(() => publish());

  let stopping: Promise<void> | undefined;
  let resolveDone!: () => void;
  const done = new Promise<void>((r) => (resolveDone = r));
  const stop = () => {
    stopping ??= (async () => {
      clearInterval(timer);
      unsubscribe();
      await kernel.stop();
      publish();
      cleanup();
      resolveDone();
    })();
    return stopping;
  };
  const onSignal = (sig: string) => {
    kernel.log.info(`Received ${sig}; stopping.`);
    void stop();
  };
  process.once('SIGINT', () => onSignal('SIGINT'));
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  return { kernel, done, stop };
}

/**
 * Starts this same CLI invocation again as a detached process (stdout and stderr to `log`), and waits until the
 * child reports ready in its pid file (kernel and servers up), or has exited (then its log says why).
 */
export async function detach(o: {
  home: string;
  processName: string;
  log: string;
  args: string[];
}): Promise<{ pid: number; log: string; gateway?: string }> {
  mkdirSync(o.home, { recursive: true });
  // The child keeps the log within logFileMaxMB (kernel/housekeeping.ts), starting with what earlier runs left.
  const fd = openSync(o.log, 'a', 0o600);
  // Re-run this same entry point (dist/cli.js, or the source entry under a loader) with the same runtime flags.
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!, ...o.args], {
    detached: true,
    stdio: ['ignore', fd, fd],
    env: { ...process.env, KEEL_LOG_FILE: o.log },
  });
  child.unref();
  const exited = new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? 1)));
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const rec = readPid(o.home, o.processName);
    if (rec && rec.pid === child.pid && rec.ready !== false)
      return { pid: child.pid!, log: o.log, ...(rec.gateway ? { gateway: rec.gateway } : {}) };
    const code = await Promise.race([exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 50))]);
    if (code !== undefined)
      throw new KeelError(ErrorCodes.PLUGIN_SETUP_FAILED, `The background process exited during start (code ${code}); see ${o.log}`);
  }
  throw new KeelError(ErrorCodes.PLUGIN_TIMEOUT, `The background process did not report ready within 20 s; see ${o.log}`);
}

export function logPath(home: string, name: string): string {
  return join(home, name);
}
