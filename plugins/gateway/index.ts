/**
 * Gateway plugin entry. In setup it serves only when asked to (`keel gateway`, `keel run --with-gateway`,
 * `gatewayAutoStart`); otherwise it stays idle, so `keel run` alone opens no port.
 */
import { errorsFor } from '../../sdk/errors.js';
import { definePlugin, errorMessage, type CommandContext } from '../../sdk/index.js';
import manifest from './manifest.js';
import { readSettings } from './src/deps.js';
import { relaySettings } from './src/relay.js';

const coded = errorsFor('gateway');

async function gatewayCommand(c: CommandContext): Promise<number> {
  const o = c.options as { port?: string; host?: string; apiKey?: string; static?: string; withAgent?: boolean; background?: boolean };
  if (o.background) {
    const { pid, log, gateway } = await c.detach({ processName: 'gateway', logName: 'gateway.log', dropArgs: ['-b', '--background'] });
    process.stdout.write(`Keel gateway is running in the background (pid ${pid})${gateway ? ` on ${gateway}` : ''}; logs: ${log}\n`);
    return 0;
  }
  const overrides: Record<string, unknown> = { gatewayAutoStart: true };
  if (o.port !== undefined) {
    const port = Number(o.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      process.stderr.write(`keel: --port must be a whole number from 0 to 65535; got "${o.port}".\n`);
      return 2;
    }
    overrides.gatewayPort = port;
  }
  if (o.host !== undefined) overrides.gatewayHost = o.host;
  if (o.apiKey !== undefined) overrides.gatewayApiKey = o.apiKey;
  if (o.static !== undefined) overrides.gatewayStaticDir = o.static;
  const running = await c.startKernel({ processName: 'gateway', overrides, runAgent: Boolean(o.withAgent) });
  const status = running.pluginStatus('gateway');
  if (status?.state !== 'loaded') {
    await running.stop();
    process.stderr.write(`keel: the gateway did not start: ${status?.reason ?? 'the gateway plugin is disabled (see `keel plugins`)'}\n`);
    return 1;
  }
  await running.done;
  return 0;
}

export default definePlugin({
  manifest,
  async setup(ctx) {
    const info = ctx.use('kernel:info');
    if (!ctx.config.get('gatewayAutoStart')) {
      // Not serving. With a shared queue, this process's agent events still go to the gateways that serve.
      const shared = relaySettings(ctx.config);
      if (!shared || !info) return {};
      const [{ createEventBus }, { startRelay }] = await Promise.all([import('./src/events.js'), import('./src/relay.js')]);
      const bus = createEventBus({ ctx, settings: readSettings(ctx), info });
      const relay = await startRelay({ ...shared, bus, receive: false, log: ctx.log }).catch((e: unknown) => {
        ctx.log.warn(`gateway: this process's live events are not relayed: ${errorMessage(e)}`);
        bus.dispose();
        return undefined;
      });
      return relay
        ? {
            stop: async () => {
              bus.dispose();
              await relay.stop();
            },
          }
        : {};
    }
    if (!info) throw coded('KEEL_E_PLUGIN_FAILED', 'the kernel did not provide kernel:info');
    // fastify loads only when the gateway serves: `keel run` alone pays nothing for it.
    const { startServer } = await import('./src/server.js');
    const server = await startServer({ ctx, settings: readSettings(ctx), info });
    return {
      stop: () => server.close(),
      health: () => server.health(),
    };
  },
  commands: { gateway: gatewayCommand },
});
