/**
 * `keel commands [list|approve <id>|refuse <id>]`: the operator's confirmation path, usable while the agent runs.
 *
 * list and refuse only touch the pending file (under its lock). approve starts a kernel in this process (no agent,
 * no queue ownership) so the command runs with the current configuration and the policy is checked again, exactly
 * as approve_command does, with the operator as the approver.
 */
import type { CommandContext, Logger } from '../../../sdk/index.js';
import { PendingCommands } from './pending.js';

const OPERATOR = { kind: 'operator', channel: 'cli' } as const;

export async function commandsCommand(c: CommandContext): Promise<number> {
  const [action = 'list', id] = c.args;
  const json = c.options.json === true;
  const log: Logger = c.log;
  if (action === 'list') {
    const items = await new PendingCommands(c.home, log).list();
    if (json) process.stdout.write(`${JSON.stringify({ commands: items }, null, 2)}\n`);
    else if (items.length === 0) process.stdout.write('No commands are waiting for confirmation.\n');
    else {
      for (const i of items) {
        const who = i.requestedBy
          ? `${i.requestedBy.kind}${i.requestedBy.userId ? ` ${i.requestedBy.userId}` : ''} on ${i.requestedBy.channel}`
          : 'unknown';
        process.stdout.write(
          `${i.id}  ${i.argv.join(' ')}\n    in ${i.cwd}, requested by ${who} at ${i.requestedAt}, expires ${i.expiresAt}\n`,
        );
      }
    }
    return 0;
  }
  if (action !== 'approve' && action !== 'refuse') {
    process.stderr.write(`keel: unknown action "${action}"; use: keel commands [list|approve <id>|refuse <id>]\n`);
    return 2;
  }
  if (!id) {
    process.stderr.write(`keel: keel commands ${action} needs the id of a pending command (see keel commands list)\n`);
    return 2;
  }
  if (action === 'refuse') {
    const item = await new PendingCommands(c.home, log).take(id);
    if (!item) {
      process.stderr.write(`keel: no pending command with id ${id} (it may have expired or been decided already)\n`);
      return 1;
    }
    log.info(`commands: ${id} ${JSON.stringify(item.argv)} refused by the operator (cli)`);
    process.stdout.write(`Command ${id} (${item.argv.join(' ')}) was refused and will not run.\n`);
    return 0;
  }
  const running = await c.startKernel({ processName: 'commands' });
  try {
    if (running.pluginStatus('system')?.state !== 'loaded') {
      process.stderr.write(
        `keel: the system plugin is not running (${running.pluginStatus('system')?.reason ?? 'see keel plugins'}), so the command cannot run\n`,
      );
      return 1;
    }
    // The same path as the approve_command skill (dispatch, policy checked again), with the operator as approver.
    const r = await running.execute('approve_command', { id, decision: 'approve' }, OPERATOR);
    process[r.success ? 'stdout' : 'stderr'].write(`${r.success ? '' : 'keel: '}${r.result}\n`);
    return r.success ? 0 : 1;
  } finally {
    await running.stop();
  }
}
