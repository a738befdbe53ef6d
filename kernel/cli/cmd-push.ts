/**
 * `keel push`: one durable append to the queue journal, without loading the queue. The running agent (if any)
 * picks the action up from the journal within a second.
 */
import type { PushInput } from '../../sdk/types.js';
import { createAction } from '../queue/action.js';
import { appendPush } from '../queue/append.js';
import { queueBackendOf } from '../queue/backend.js';
import { keelHome } from '../paths.js';

export async function push(task: string, opts: { priority: string; json?: boolean }): Promise<number> {
  const home = keelHome();
  const input: PushInput = { task, priority: opts.priority, source: 'cli', actor: { kind: 'operator', channel: 'cli' } };
  const redis = await queueBackendOf(home);
  let action;
  if (redis) {
    // A shared queue (queueRedisUrl): one entry in its Redis stream.
    action = createAction(input, Date.now());
    await (await import('../queue/redis-store.js')).pushToRedis(redis, action);
  } else action = await appendPush(home, input);
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(action)}\n`);
  } else {
    const shown = action.task.length > 80 ? `${action.task.slice(0, 77)}...` : action.task;
    process.stdout.write(`Queued "${shown}" as ${action.id} with priority ${action.priority}\n`);
  }
  return 0;
}
