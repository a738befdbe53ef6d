/**
 * The full `keel` command tree, built with commander from the table in commands.ts. Each command imports its
 * implementation lazily, so no command pays for another's code and none loads plugin code to be listed.
 */
import { Command, CommanderError, Option } from 'commander';
import { COMMANDS, DESCRIPTION, GLOBAL_OPTIONS, type CommandSpec } from './commands.js';
import { EXIT, reportError } from './exit.js';
import { lightManifests, packageVersion } from './light-manifests.js';

type Opts = Record<string, unknown> & { json?: boolean; config?: string };
type Handler = (args: string[], opts: Opts) => Promise<number | void>;

/** What each built-in command does, keyed by its path. */
const HANDLERS: Record<string, Handler> = {
  push: async ([task], o) =>
    (await import('./cmd-push.js')).push(String(task), {
      priority: String(o.priority),
      json: Boolean(o.json),
      ...(typeof o.key === 'string' ? { key: o.key } : {}),
    }),
  run: async (_a, o) => (await import('./cmd-run.js')).runCommand(o),
  status: async (_a, o) => (await import('./cmd-status.js')).status(o),
  stop: async (_a, o) => (await import('./cmd-stop.js')).stop({ json: Boolean(o.json), timeout: String(o.timeout) }),
  tasks: async (_a, o) => (await import('./cmd-tasks.js')).listTasks(o),
  cancel: async ([id], o) => (await import('./cmd-cancel.js')).cancelTask(id!, { json: Boolean(o.json), reason: String(o.reason ?? '') }),
  'config set': async ([k, v], o) => (await import('./cmd-config.js')).configSet(k!, v!, o),
  'config get': async ([k], o) => (await import('./cmd-config.js')).configGet(k, o),
  'config pending': async (_a, o) => (await import('./cmd-config.js')).configPending(o),
  'config approve': async ([id], o) => (await import('./cmd-config.js')).configDecide(id!, 'approve', o),
  'config reject': async ([id], o) => (await import('./cmd-config.js')).configDecide(id!, 'reject', o),
  plugins: async (_a, o) => (await import('./cmd-plugins.js')).listPlugins(o),
  'plugins enable': async ([id]) => (await import('./cmd-plugins.js')).enablePlugin(id!),
  skills: async (_a, o) => (await import('./cmd-skills.js')).listSkills(o),
};

function build(): Command {
  const program = new Command('keel').description(DESCRIPTION).version(packageVersion(), '-V, --version');
  for (const o of GLOBAL_OPTIONS) program.option(o.flags, o.description);
  program.showHelpAfterError('(run with --help for usage)').exitOverride();

  const byPath = new Map<string, Command>([['', program]]);
  const act =
    (handler: Handler) =>
    async (...params: unknown[]) => {
      // commander passes the positional arguments, then the options, then the command itself.
      const opts = { ...(params.at(-2) as Opts), ...program.opts<Opts>() };
      const positional = params.slice(0, -2).map((p) => (Array.isArray(p) ? p.join(' ') : (p as string | undefined))) as string[];
      try {
        process.exitCode = (await handler(positional, opts)) ?? EXIT.OK;
      } catch (e) {
        process.exitCode = reportError(e, Boolean(opts.json));
      }
    };
  const add = (spec: CommandSpec, handler?: Handler) => {
    const parent = byPath.get(spec.path.slice(0, -1).join(' '))!;
    const cmd = parent.command(spec.path.at(-1)!).description(spec.description);
    // A command that uses -h itself (`keel gateway -h <host>`) keeps only --help for help.
    if (spec.options?.some((o) => /^-h[, ]/.test(o.flags))) cmd.helpOption('--help', 'display help for command');
    for (const a of spec.args ?? []) cmd.argument(a.syntax, a.description);
    for (const o of spec.options ?? []) {
      const opt = new Option(o.flags, o.description);
      if (o.default !== undefined) opt.default(o.default);
      if (o.hidden) opt.hideHelp();
      cmd.addOption(opt);
    }
    if (handler) cmd.action(act(handler));
    byPath.set(spec.path.join(' '), cmd);
  };
  for (const spec of COMMANDS) add(spec, HANDLERS[spec.path.join(' ')]);

  // Commands contributed by plugins, declared in their manifests (no plugin code is imported to list them).
  for (const { manifest } of lightManifests()) {
    for (const c of manifest.cli ?? []) {
      const [name, ...args] = c.name.split(' ');
      if (byPath.has(name!)) continue;
      add(
        {
          path: [name!],
          args: args.map((syntax) => ({ syntax })),
          description: `${c.description} [plugin ${manifest.id}]`,
          options: (c.options ?? []).map((o) => ({
            flags: o.flags,
            description: o.description,
            ...(o.default !== undefined ? { default: String(o.default) } : {}),
          })),
        },
        async (positional, opts) => (await import('./plugin-command.js')).runPluginCommand(manifest.id, name!, positional, opts),
      );
    }
  }
  return program;
}

export async function main(argv: string[]): Promise<void> {
  try {
    await build().parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      // --help and --version exit 0; usage mistakes exit 2.
      process.exitCode = e.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    } else {
      process.exitCode = reportError(e);
    }
  }
}
