/**
 * Moving a Redis deployment of the earlier shared queue (a Redis stream of ops, `<prefix>queue:ops`, folded into
 * `<prefix>queue:base`) onto BullMQ: the first runner that finds those keys folds them once, adds every action
 * that still waited or ran to BullMQ under its own id (adding an id BullMQ has is a no-op, so a crash halfway and a
 * second try move nothing twice), renames the old keys to `...:migrated` and says how many it moved.
 */
import { signerOf } from '../../sdk/signing.js';
import { errorMessage } from '../errors.js';
import type { BullQueue } from './bull-queue.js';
import { decodeOp, isActionLike } from './ops.js';
import { QueueState } from './state.js';
import type { QueueSnapshot } from './store.js';

export async function migrateStreamQueue(q: BullQueue, signingKey?: string): Promise<number> {
  const { redis, prefix, log, add } = q.internals();
  const streamKey = `${prefix}queue:ops`;
  const baseKey = `${prefix}queue:base`;
  if ((await redis.exists(streamKey, baseKey)) === 0) return 0;
  const lock = `${prefix}q:migrating`;
  if ((await redis.set(lock, String(process.pid), 'PX', 120_000, 'NX')) !== 'OK') return 0;
  try {
    const signer = signerOf(signingKey, prefix);
    const state = new QueueState({ completedLimit: 100, failedLimit: 100 });
    const now = Date.now();
    let snapshot: QueueSnapshot = { actions: [], completed: [], failed: [] };
    let lastId = '0-0';
    const raw = await redis.get(baseKey);
    if (raw) {
      try {
        const b = JSON.parse(raw) as { lastId?: unknown; snapshot?: QueueSnapshot };
        if (typeof b.lastId === 'string' && b.snapshot && Array.isArray(b.snapshot.actions) && b.snapshot.actions.every(isActionLike)) {
          snapshot = { actions: b.snapshot.actions, completed: [], failed: [] };
          lastId = b.lastId;
        }
      } catch (e) {
        log.warn(`Queue: the old queue's base (${baseKey}) is unreadable (${errorMessage(e)}); only its ops are moved.`);
      }
    }
    state.reset(snapshot, now);
    const entries = (await redis.xrange(streamKey, `(${lastId}`, '+')) as Array<[string, string[]]>;
    let refused = 0;
    for (const [, fields] of entries) {
      const i = fields.indexOf('op');
      const json = i >= 0 ? fields[i + 1]! : '';
      if (signer) {
        const s = fields.indexOf('s');
        if (!signer.verify(json, s >= 0 ? fields[s + 1] : undefined)) {
          refused++;
          continue;
        }
      }
      try {
        state.apply(decodeOp(json), now);
      } catch {
        refused++;
      }
    }
    const waiting = state.snapshot(now).actions;
    for (const a of waiting) await add({ ...a, status: 'pending', metadata: { ...a.metadata } });
    if ((await redis.exists(streamKey)) === 1) await redis.rename(streamKey, `${streamKey}:migrated`);
    if ((await redis.exists(baseKey)) === 1) await redis.rename(baseKey, `${baseKey}:migrated`);
    log.info(
      `Queue: moved ${waiting.length} waiting action(s) from the earlier shared queue (${streamKey}) into BullMQ, with their ids${refused ? `; ${refused} unreadable or unsigned op(s) skipped` : ''}. The old keys are kept as ${streamKey}:migrated and ${baseKey}:migrated.`,
    );
    return waiting.length;
  } finally {
    await redis.del(lock).catch(() => {});
  }
}
