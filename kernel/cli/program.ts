/**
 * The full `keel` command tree (commander). Each command imports its implementation lazily, so `keel --help`
 * loads no plugin code and almost none of the kernel.
 */
import { Command, CommanderError, Option } from 'commander';
import { EXIT, reportError } from './exit.js';
import { lightManifests, packageVersion } from './light-manifests.js';

const program = new Command('keel')
  .description('Keel: an autonomous agent service. Tasks go into a priority queue; the agent carries them out with skills.')
  .version(packageVersion(), '-V, --version')
  .option('--config <file>', 'configuration file (default $KEEL_HOME/keel.config.yaml)')
  .showHelpAfterError('(run with --help for usage)')
  .exitOverride();

function globals(): { config?: string } {
  return program.opts<{ config?: string }>();
}

async function run(fn: () => Promise<number | void>): Promise<void> {
  try {
    process.exitCode = (await fn()) ?? EXIT.OK;
  } catch (e) {
    process.exitCode = reportError(e);
  }
}

program
  .command('push')
  .description('Add a task to the queue (it runs while `keel run` runs)')
  .argument('<task...>', 'what the agent should do')
  .option('-p, --priority <1-10>', 'priority, higher runs first; clamped to 1..10', '5')
  .option('--json', 'print the queued action as JSON')
  .action((task: string[], opts: { priority: string; json?: boolean }) =>
    run(async () => (await import('./cmd-push.js')).push(task.join(' '), opts)),
  );

program
  .command('run')
  .description('Run the agent: take tasks from the queue and carry them out')
  .option('-d, --daemon', 'run detached in the background; logs to $KEEL_HOME/daemon.log')
  .option('--with-gateway', 'also start the gateway in this process (needs the gateway plugin)')
  .addOption(new Option('--foreground-daemon').hideHelp())
  .action((opts: { daemon?: boolean; withGateway?: boolean; foregroundDaemon?: boolean }) =>
    run(async () => (await import('./cmd-run.js')).runCommand({ ...opts, ...globals() })),
  );

program
  .command('status')
  .description('Show whether Keel runs, its processes, the queue and plugin problems (exit 3 when not running)')
  .option('--json', 'machine-readable output')
  .action((opts: { json?: boolean }) => run(async () => (await import('./cmd-status.js')).status({ ...opts, ...globals() })));

program
  .command('stop')
  .description('Stop every Keel process started for this KEEL_HOME (agent, background gateway)')
  .option('--json', 'machine-readable output')
  .option('-t, --timeout <ms>', 'how long to wait before killing', '10000')
  .action((opts: { json?: boolean; timeout: string }) => run(async () => (await import('./cmd-stop.js')).stop(opts)));

const config = program.command('config').description('Read and change configuration ($KEEL_HOME/keel.config.yaml)');
config
  .command('set')
  .description('Set a key (operator: any key; values parsed by the key type: true/false, numbers, JSON arrays/objects)')
  .argument('<key>')
  .argument('<value>')
  .option('--json', 'machine-readable output')
  .action((key: string, value: string, opts: { json?: boolean }) =>
    run(async () => (await import('./cmd-config.js')).configSet(key, value, { ...opts, ...globals() })),
  );
config
  .command('get')
  .description('Print effective values (secrets masked); all keys when none is named')
  .argument('[key]')
  .option('--json', 'machine-readable output')
  .option('--source', 'show where each value comes from (default, file, env, override)')
  .action((key: string | undefined, opts: { json?: boolean; source?: boolean }) =>
    run(async () => (await import('./cmd-config.js')).configGet(key, { ...opts, ...globals() })),
  );
config
  .command('pending')
  .description('List configuration changes the agent asked for that wait for approval')
  .option('--json', 'machine-readable output')
  .action((opts: { json?: boolean }) => run(async () => (await import('./cmd-config.js')).configPending({ ...opts, ...globals() })));
config
  .command('approve')
  .description('Approve a pending change by id')
  .argument('<id>')
  .action((id: string) => run(async () => (await import('./cmd-config.js')).configDecide(id, 'approve', globals())));
config
  .command('reject')
  .description('Reject a pending change by id')
  .argument('<id>')
  .action((id: string) => run(async () => (await import('./cmd-config.js')).configDecide(id, 'reject', globals())));

const plugins = program
  .command('plugins')
  .description('List plugins with their state (loaded, disabled by list, quarantined, invalid)')
  .option('--json', 'machine-readable output')
  .action((opts: { json?: boolean }) => run(async () => (await import('./cmd-plugins.js')).listPlugins({ ...opts, ...globals() })));
plugins
  .command('enable')
  .description('Lift the quarantine of a plugin (after repairing it)')
  .argument('<id>')
  .action((id: string) => run(async () => (await import('./cmd-plugins.js')).enablePlugin(id)));

program
  .command('skills')
  .description('List skills from plugin manifests and custom skills')
  .option('--json', 'machine-readable output')
  .action((opts: { json?: boolean }) => run(async () => (await import('./cmd-skills.js')).listSkills({ ...opts, ...globals() })));

program
  .command('tasks')
  .description('List queued, completed and failed actions')
  .option('--json', 'machine-readable output')
  .action((opts: { json?: boolean }) => run(async () => (await import('./cmd-tasks.js')).listTasks(opts)));

// Commands contributed by plugins, declared in their manifests (no plugin code is imported to list them).
for (const { manifest } of lightManifests()) {
  for (const spec of manifest.cli ?? []) {
    const name = spec.name.split(' ')[0]!;
    if (program.commands.some((c) => c.name() === name)) continue;
    const cmd = program.command(spec.name).description(`${spec.description} [plugin ${manifest.id}]`);
    for (const o of spec.options ?? []) cmd.option(o.flags, o.description, o.default as string | boolean | undefined);
    cmd.action((...args: unknown[]) =>
      run(async () => (await import('./plugin-command.js')).runPluginCommand(manifest.id, name, args, globals())),
    );
  }
}

export async function main(argv: string[]): Promise<void> {
  try {
    await program.parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      // --help and --version exit 0; usage mistakes exit 2.
      process.exitCode = e.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    } else {
      process.exitCode = reportError(e);
    }
  }
}
