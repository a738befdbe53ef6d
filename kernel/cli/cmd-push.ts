/**
 * `keel push`: one durable append to the queue journal, without loading the queue. The running agent (if any)
 * picks the action up from the journal within a second.
 */
import { appendPush } from '../queue/append.js';
import { keelHome } from '../paths.js';

export async function push(task: string, opts: { priority: string; json?: boolean }): Promise<number> {
  const action = await appendPush(keelHome(), {
    task,
    priority: opts.priority,
    source: 'cli',
    actor: { kind: 'operator', channel: 'cli' },
  });
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(action)}\n`);
  } else {
    const shown = action.task.length > 80 ? `${action.task.slice(0, 77)}...` : action.task;
    process.stdout.write(`Queued "${shown}" as ${action.id} with priority ${action.priority}\n`);
  }
  return 0;
}
