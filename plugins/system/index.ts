/**
 * System plugin entry: run_command, approve_command, manage_config, and `keel commands`.
 * Rules, decisions and limits: docs/security.md.
 */
import { definePlugin } from '../../sdk/index.js';
import manifest from './manifest.js';
import { commandsCommand } from './src/cli.js';
import { manageConfig } from './src/manage-config.js';
import { approvalRoutes, createApprovals } from './src/approvals.js';
import { CommandService } from './src/service.js';

export default definePlugin({
  manifest,
  setup(ctx) {
    const svc = new CommandService(ctx);
    const approvals = createApprovals(ctx, svc);
    svc.approvals = approvals;
    ctx.provide('approvals', approvals);
    ctx.provide('gateway:routes:system', approvalRoutes(approvals));
    // Expiry is checked every 15 s (and before every decision): an unanswered request ends with a message.
    const sweeper = setInterval(() => void approvals.sweep().catch((e) => ctx.log.warn(`approvals: ${String(e)}`)), 15_000);
    sweeper.unref();
    ctx.skills.register('run_command', (args, c) => svc.request(args, c.actor, c.signal, c.action));
    ctx.skills.register('approve_command', (args, c) => svc.decide(args.id, args.decision, c.actor, c.signal));
    ctx.skills.register('manage_config', (args, c) => manageConfig(ctx, args, c.actor, c.action, approvals));
    // Said once at start (docs/security.md): which isolation commands get here. Not awaited: start stays fast.
    const reported = svc.reportIsolation().catch((e) => ctx.log.warn(`commands: the isolation could not be checked: ${String(e)}`));
    return {
      stop: async () => {
        clearInterval(sweeper);
        await reported;
        svc.close();
      },
    };
  },
  commands: { commands: commandsCommand },
});
