/**
 * Runs a CLI command a plugin declared in its manifest: imports that plugin's entry and calls its handler.
 */
import type { CommandContext, PluginContext } from '../../sdk/plugin.js';
import { ErrorCodes, KeelError } from '../errors.js';
import { LogSink } from '../log.js';
import { keelHome } from '../paths.js';
import { discoverAll } from '../plugins/discover.js';

export async function runPluginCommand(
  pluginId: string,
  name: string,
  positional: string[],
  options: Record<string, unknown> & { config?: string },
): Promise<number> {
  const globals = { ...(options.config ? { config: options.config } : {}) };
  const home = keelHome();
  const candidate = (await discoverAll({ home })).find((c) => c.id === pluginId);
  if (!candidate) throw new KeelError(ErrorCodes.PLUGIN_LOAD_FAILED, `Plugin ${pluginId} is not installed.`);
  const def = await candidate.load();
  const handler = def.commands?.[name];
  if (!handler) throw new KeelError(ErrorCodes.PLUGIN_LOAD_FAILED, `Plugin ${pluginId} declares the command "${name}" but exports no handler for it.`);
  const logs = new LogSink();
  const ctx: CommandContext = {
    home,
    log: logs.logger(pluginId),
    args: positional,
    options,
    async startKernel(o = {}) {
      const { startKernel } = await import('../kernel.js');
      const kernel = await startKernel({
        home,
        logs,
        ...(globals.config ? { configFile: globals.config } : {}),
        ...(o.overrides ? { overrides: o.overrides } : {}),
        runAgent: Boolean(o.runAgent),
      });
      let resolveDone!: () => void;
      const done = new Promise<void>((r) => (resolveDone = r));
      const stop = async () => {
        await kernel.stop();
        resolveDone();
      };
      process.once('SIGINT', () => void stop());
      process.once('SIGTERM', () => void stop());
      const probe = {
        id: `cli:${pluginId}`,
        home,
        version: kernel.version,
        config: kernel.config,
        log: logs.logger(pluginId),
        hooks: { tap: () => undefined },
        skills: {
          register: () => undefined,
          execute: (n: string, a: unknown, actor: Parameters<typeof kernel.execute>[2]) => kernel.execute(n, a, actor),
          list: () => [...kernel.registry.skills.values()].map((e) => ({ ...e.manifest, plugin: e.plugin })),
        },
        queue: { push: (i: Parameters<typeof kernel.queue.push>[0]) => kernel.queue.push(i), get: (id: string) => kernel.queue.get(id), list: () => kernel.queue.list(), counts: () => kernel.queue.counts() },
        use: <T>(cap: string) => kernel.registry.use<T>(cap),
        provide: () => {
          throw new KeelError(ErrorCodes.FORBIDDEN, 'A command context cannot provide capabilities.');
        },
        signal: new AbortController().signal,
      };
      return { ctx: probe as unknown as PluginContext, done, stop };
    },
  };
  return (await handler(ctx)) ?? 0;
}
