/**
 * Runs a CLI command a plugin declared in its manifest: imports that plugin's entry and calls its handler with
 * a CommandContext (start the kernel as a long-running process, or detach into the background).
 */
import { join } from 'node:path';
import type { CommandContext } from '../../sdk/plugin.js';
import type { PluginKind } from '../../sdk/types.js';
import { ErrorCodes, KeelError } from '../errors.js';
import { LogSink } from '../log.js';
import { keelHome } from '../paths.js';
import { discoverAll } from '../plugins/discover.js';
import { permittedByLists, readPluginLists } from '../plugins/lists.js';
import { detach, serve } from './serve.js';

export async function runPluginCommand(
  pluginId: string,
  name: string,
  positional: string[],
  options: Record<string, unknown> & { config?: string },
): Promise<number> {
  const home = keelHome();
  const lists = await readPluginLists(home, options.config);
  const candidate = (await discoverAll({ home, lists })).find((c) => c.id === pluginId);
  if (!candidate) throw new KeelError(ErrorCodes.PLUGIN_LOAD_FAILED, `Plugin ${pluginId} is not installed.`);
  if (candidate.disabled) throw new KeelError(ErrorCodes.PLUGIN_LOAD_FAILED, `Plugin ${pluginId} is disabled: ${candidate.disabled}.`);
  const allowed = permittedByLists(pluginId, lists.allow, lists.deny);
  if (!allowed.ok) throw new KeelError(ErrorCodes.PLUGIN_LOAD_FAILED, `Plugin ${pluginId} is disabled: ${allowed.reason}.`);
  const def = await candidate.load();
  const handler = def.commands?.[name];
  if (!handler)
    throw new KeelError(ErrorCodes.PLUGIN_LOAD_FAILED, `Plugin ${pluginId} declares the command "${name}" but exports no handler for it.`);
  const logs = new LogSink();
  const ctx: CommandContext = {
    home,
    log: logs.logger(pluginId),
    args: positional,
    options,
    ...(options.config ? { configFile: options.config } : {}),
    async startKernel(o) {
      let overrides = o.overrides;
      if (o.only) {
        // An allow list of what the command asked for, within what the user's own list admits.
        const all = await discoverAll({ home, lists });
        const wanted = all
          .filter(
            (c) =>
              c.id === pluginId ||
              o.only?.ids?.includes(c.id) ||
              o.only?.kinds?.includes((c.manifest as { kind?: PluginKind } | undefined)?.kind as PluginKind),
          )
          .map((c) => c.id)
          .filter((id) => !lists.allow?.length || lists.allow.includes(id));
        overrides = { ...overrides, pluginAllowList: [...new Set(wanted)] };
      }
      const levels = { info: 3, warn: 1, error: 0 } as const;
      const served = await serve({
        home,
        processName: o.processName,
        mode: process.env.KEEL_DETACHED === o.processName ? 'background' : 'foreground',
        runAgent: Boolean(o.runAgent),
        ...(options.config ? { configFile: options.config } : {}),
        ...(overrides ? { overrides } : {}),
        kernel: { logs: o.logLevel && o.logLevel !== 'info' ? new LogSink({ level: levels[o.logLevel] }) : logs },
      });
      return {
        pluginStatus: (id) => served.kernel.host.status(id),
        execute: (skill, args, actor) => served.kernel.execute(skill, args, actor),
        skills: () =>
          [...served.kernel.registry.skills.values()]
            .filter((e) => served.kernel.registry.isAvailable(e))
            .map((e) => ({ ...e.manifest, plugin: e.plugin })),
        done: served.done,
        stop: served.stop,
      };
    },
    async inspect() {
      const { offlineView } = await import('./offline.js');
      const { keelVersion } = await import('../kernel.js');
      const v = await offlineView(home, options.config);
      const masked = v.config.all({ masked: true });
      return {
        version: keelVersion(),
        config: { get: (key: string) => (key in masked ? masked[key] : v.config.get(key)) },
        keys: v.keys.entries().map((e) => ({ key: e.key, owner: e.owner, policy: e.spec.policy, secret: Boolean(e.spec.secret) })),
        plugins: v.statuses.map((s) => ({
          id: s.id,
          state: s.state === 'stopped' ? 'enabled' : s.state,
          ...(s.reason ? { reason: s.reason } : {}),
        })),
        configProblems: v.config.problems().map((p) => p.message),
        secret: (key: string) => {
          const secrets = (candidate.manifest as { permissions?: { secrets?: string[] } } | undefined)?.permissions?.secrets ?? [];
          if (!secrets.includes(key)) return undefined;
          const value = v.config.get(key);
          return typeof value === 'string' && value ? value : undefined;
        },
      };
    },
    async detach(o) {
      const args = process.argv.slice(2).filter((a) => !o.dropArgs.includes(a));
      process.env.KEEL_DETACHED = o.processName;
      return detach({ home, processName: o.processName, log: join(home, o.logName), args });
    },
  };
  return (await handler(ctx)) ?? 0;
}
