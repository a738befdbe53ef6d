/**
 * `keel run`: the agent in the foreground, or detached with --daemon (logs to $KEEL_HOME/daemon.log).
 * One runner per KEEL_HOME: a second `keel run` is refused while the first is alive.
 */
import { join } from 'node:path';
import { ErrorCodes, KeelError } from '../errors.js';
import { keelHome } from '../paths.js';
import { detach, refuseIfAgentRunning, serve } from './serve.js';

export interface RunOptions {
  daemon?: boolean;
  withGateway?: boolean;
  foregroundDaemon?: boolean;
  config?: string;
}

export async function runCommand(opts: RunOptions): Promise<number> {
  const home = keelHome();
  refuseIfAgentRunning(home);
  if (opts.daemon) {
    const args = [
      ...(opts.config ? ['--config', opts.config] : []),
      'run',
      '--foreground-daemon',
      ...(opts.withGateway ? ['--with-gateway'] : []),
    ];
    const { pid, log, gateway } = await detach({ home, processName: 'agent', log: join(home, 'daemon.log'), args });
    process.stdout.write(`Keel is running in the background (pid ${pid})${gateway ? `, gateway on ${gateway}` : ''}; logs: ${log}\n`);
    return 0;
  }
  const served = await serve({
    home,
    processName: 'agent',
    mode: opts.foregroundDaemon ? 'daemon' : 'foreground',
    runAgent: true,
    ...(opts.config ? { configFile: opts.config } : {}),
    ...(opts.withGateway ? { overrides: { gatewayAutoStart: true } } : {}),
  });
  if (opts.withGateway && !served.kernel.host.isRunning('gateway')) {
    const reason = served.kernel.host.status('gateway')?.reason;
    await served.stop();
    throw new KeelError(
      ErrorCodes.PLUGIN_NOT_PROVIDED,
      reason
        ? `The gateway did not start: ${reason}`
        : '--with-gateway needs the gateway plugin, which is not installed or not enabled (see `keel plugins`).',
    );
  }
  served.kernel.log.info(`Keel ${served.kernel.version} is running (pid ${process.pid}, data in ${home}).`);
  await served.done;
  return 0;
}
