/**
 * `keel tasks`: pending (in run order), completed and failed actions.
 */
import { keelHome } from '../paths.js';
import { truncateForLog } from '../queue/index.js';

export async function listTasks(opts: { json?: boolean }): Promise<number> {
  const { readQueueList } = await import('../queue/index.js');
  const { queueBackendOf } = await import('../queue/backend.js');
  const home = keelHome();
  const redis = await queueBackendOf(home);
  const list = await readQueueList(home, undefined, redis ? { redis } : {});
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(list, null, 2)}\n`);
    return 0;
  }
  for (const group of ['pending', 'completed', 'failed'] as const) {
    process.stdout.write(`${group} (${list[group].length})\n`);
    for (const a of list[group]) {
      process.stdout.write(
        `  ${a.id}  p${a.priority}  ${a.status.padEnd(9)} ${truncateForLog(a.task, 70)}${a.error ? `  — ${a.error}` : ''}\n`,
      );
    }
  }
  return 0;
}
