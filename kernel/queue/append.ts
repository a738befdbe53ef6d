/**
 * The `keel push` fast path: one durable append to the journal under the queue lock, without loading the queue.
 * Its cost does not depend on how many actions are queued, and its import graph stays tiny (node built-ins,
 * action.ts, errors.ts and the built-ins-only helpers beside it): keep it that way.
 */
import { closeSync, existsSync, fstatSync, mkdirSync } from 'node:fs';
import type { Action, PushInput } from '../../sdk/types.js';
import { createAction } from './action.js';
import {
  appendDurableSync,
  copyFileAtomic,
  createJournal,
  cutTornTail,
  openJournalAppend,
  queuePaths,
  writeFileAtomic,
} from './journal-file.js';
import { acquireLock, type LockOptions } from './lock.js';
import { encodeOp } from './ops.js';
import { encodeSnapshot } from './snapshot-file.js';

/**
 * Validates `input`, appends its push op to `$KEEL_HOME/actions.journal` and resolves once it is on disk.
 * A running owner (the runner) picks it up from the journal within a second; otherwise the next open does.
 */
export async function appendPush(home: string, input: PushInput, opts: LockOptions & { now?: number } = {}): Promise<Action> {
  const action = createAction(input, opts.now ?? Date.now());
  const paths = queuePaths(home);
  mkdirSync(paths.home, { recursive: true });
  const line = Buffer.from(encodeOp({ op: 'push', action }));
  const lock = await acquireLock(paths.lock, opts);
  try {
    // The very first change of this home: the queue was empty, so `actions.json` can show it at constant cost
    // (SPEC names the file; it exists from the first push on, and the runner keeps it up to date).
    const first = !existsSync(paths.journal) && !existsSync(paths.snapshot);
    const journalId = first ? createJournal(paths) : undefined;
    const fd = openJournalAppend(paths);
    try {
      cutTornTail(fd);
      appendDurableSync(fd, line);
      if (journalId !== undefined) {
        writeFileAtomic(
          paths.snapshot,
          paths.home,
          encodeSnapshot({ actions: [action], completed: [], failed: [] }, journalId, fstatSync(fd).size),
        );
        copyFileAtomic(paths.snapshot, paths.snapshotBak);
      }
    } finally {
      closeSync(fd);
    }
  } finally {
    lock.release();
  }
  return action;
}
