/**
 * `keel cancel <id>`: removes a waiting action, or stops a running one wherever it runs (this machine's `keel run`,
 * or another machine's on a shared queue): the stop is recorded in the queue, the runner holding the action aborts
 * it, and it ends failed with the reason, never retried. Works whether or not Keel runs here.
 */
import { ErrorCodes, KeelError } from '../errors.js';
import { keelHome } from '../paths.js';
import { EXIT } from './exit.js';

export async function cancelTask(id: string, opts: { json?: boolean; reason?: string }): Promise<number> {
  const reason = opts.reason?.trim() || 'cancelled by the operator (keel cancel)';
  const { openQueue, cancelAction } = await import('../queue/index.js');
  const { queueBackendOf } = await import('../queue/backend.js');
  const home = keelHome();
  const redis = await queueBackendOf(home);
  const quiet = { debug() {}, info() {}, warn() {}, error() {} };
  const q = await openQueue({ home, owner: false, log: quiet, quietCompactMs: 0, ...(redis ? { redis } : {}) });
  let result: Awaited<ReturnType<typeof cancelAction>>;
  try {
    result = await cancelAction(q, id, reason);
  } finally {
    await q.close();
  }
  const { outcome, action } = result;
  if (outcome === 'unknown') throw new KeelError(ErrorCodes.ACTION_NOT_FOUND, `No action has id ${id}. \`keel tasks\` lists them.`, { id });
  const message =
    outcome === 'removed'
      ? `Removed ${id} from the queue.`
      : outcome === 'stopping'
        ? `Stopping ${id}: the runner carrying it out aborts it, and it ends failed ("${reason}"), not retried.`
        : `${id} has already ${action?.status === 'completed' ? 'completed' : 'failed'}; nothing to cancel.`;
  if (opts.json) process.stdout.write(`${JSON.stringify({ id, outcome, message })}\n`);
  else process.stdout.write(`${message}\n`);
  return outcome === 'settled' ? EXIT.FAILURE : EXIT.OK;
}
