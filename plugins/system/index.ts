/**
 * System plugin entry: run_command, approve_command, manage_config, and `keel commands`.
 * Rules, decisions and limits: docs/security.md.
 */
import { definePlugin } from '../../sdk/index.js';
import manifest from './manifest.js';
import { commandsCommand } from './src/cli.js';
import { manageConfig } from './src/manage-config.js';
import { CommandService } from './src/service.js';

export default definePlugin({
  manifest,
  setup(ctx) {
    const svc = new CommandService(ctx);
    ctx.skills.register('run_command', (args, c) => svc.request(args, c.actor, c.signal));
    ctx.skills.register('approve_command', (args, c) => svc.decide(args.id, args.decision, c.actor, c.signal));
    ctx.skills.register('manage_config', (args, c) => manageConfig(ctx, args, c.actor));
    // Said once at start (docs/security.md): which isolation commands get here. Not awaited: start stays fast.
    const reported = svc.reportIsolation().catch((e) => ctx.log.warn(`commands: the isolation could not be checked: ${String(e)}`));
    return {
      stop: async () => {
        await reported;
        svc.close();
      },
    };
  },
  commands: { commands: commandsCommand },
});
