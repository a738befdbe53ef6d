/**
 * `keel push`: one durable append to the queue journal, without loading the queue. The running agent (if any)
 * picks the action up from the journal within a second. On a shared queue (queueRedisUrl) one BullMQ job is added.
 * With `--key`, a push retried with the same key is the first push's action (the file queue is read for that).
 */
import type { Action, PushInput } from '../../sdk/types.js';
import { appendPush } from '../queue/append.js';
import { queueBackendOf } from '../queue/backend.js';
import { keelHome } from '../paths.js';

export async function push(task: string, opts: { priority: string; json?: boolean; key?: string }): Promise<number> {
  const home = keelHome();
  const input: PushInput = { task, priority: opts.priority, source: 'cli', actor: { kind: 'operator', channel: 'cli' } };
  const redis = await queueBackendOf(home);
  const key = opts.key !== undefined ? { idempotencyKey: opts.key } : {};
  let action: Action;
  if (redis) action = await (await import('../queue/bull-queue.js')).pushToShared(redis, input, key);
  else if (opts.key !== undefined) {
    const { ActionQueue } = await import('../queue/queue.js');
    const q = await ActionQueue.open({ home, owner: false, quietCompactMs: 0 });
    try {
      action = await q.push(input, key);
    } finally {
      await q.close();
    }
  } else action = await appendPush(home, input);
  if (opts.json) {
    process.stdout.write(`${JSON.stringify(action)}\n`);
  } else {
    const shown = action.task.length > 80 ? `${action.task.slice(0, 77)}...` : action.task;
    process.stdout.write(`Queued "${shown}" as ${action.id} with priority ${action.priority}\n`);
  }
  return 0;
}
