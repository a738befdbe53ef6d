/**
 * The `keel push` fast path: one durable append to the journal under the queue lock, without loading the queue.
 * Its import graph stays tiny (node built-ins, action.ts, errors.ts and the built-ins-only helpers beside it):
 * keep it that way.
 *
 * `actions.json` (SPEC's queue file) shows every acknowledged push: while a runner owns the queue it folds the
 * journal in itself (about a second after the queue goes quiet), so the push only appends and its cost does not
 * depend on how many actions are queued. With no runner alive the push also rewrites `actions.json` under the
 * same lock: the new action is added to the file as it is (no parse of the queue), or, when the file does not
 * already hold everything before this push (a runner was killed before it folded its last changes), the whole
 * queue is read and folded once.
 */
import { closeSync, existsSync, fstatSync, mkdirSync, readFileSync, readSync } from 'node:fs';
import type { Action, PushInput } from '../../sdk/types.js';
import { createAction } from './action.js';
import {
  appendDurableSync,
  copyFileAtomic,
  createJournal,
  cutTornTail,
  openJournalAppend,
  type QueuePaths,
  queuePaths,
  writeFileAtomic,
} from './journal-file.js';
import { acquireLock, type LockOptions } from './lock.js';
import { decodeHeader, encodeOp } from './ops.js';
import { isOwnerAlive } from './owner.js';
import { encodeSnapshot } from './snapshot-file.js';

/**
 * Validates `input`, appends its push op to `$KEEL_HOME/actions.journal` and resolves once it is on disk.
 * A running owner (the runner) picks it up from the journal within a second; otherwise the next open does, and
 * `actions.json` shows it already (see above).
 */
export async function appendPush(home: string, input: PushInput, opts: LockOptions & { now?: number } = {}): Promise<Action> {
  const action = createAction(input, opts.now ?? Date.now());
  const paths = queuePaths(home);
  mkdirSync(paths.home, { recursive: true });
  const line = Buffer.from(encodeOp({ op: 'push', action }));
  let foldAll = false;
  const lock = await acquireLock(paths.lock, opts);
  try {
    // The very first change of this home: the queue was empty, so `actions.json` can show it at constant cost.
    const first = !existsSync(paths.journal) && !existsSync(paths.snapshot);
    const journalId = first ? createJournal(paths) : undefined;
    const fd = openJournalAppend(paths);
    try {
      const before = cutTornTail(fd);
      appendDurableSync(fd, line);
      // Acknowledged from here on: what follows only brings actions.json up to date.
      if (journalId !== undefined) {
        writeFileAtomic(
          paths.snapshot,
          paths.home,
          encodeSnapshot({ actions: [action], completed: [], failed: [] }, journalId, fstatSync(fd).size),
        );
        copyFileAtomic(paths.snapshot, paths.snapshotBak);
      } else if (!isOwnerAlive(paths.home)) {
        try {
          foldAll = !addToSnapshot(paths, fd, action, before, fstatSync(fd).size);
        } catch {
          // The push is durable in the journal already; the next fold (this or a runner's) catches the file up.
        }
      }
    } finally {
      closeSync(fd);
    }
  } finally {
    lock.release();
  }
  if (foldAll) await foldQueue(home).catch(() => undefined);
  return action;
}

/**
 * Adds `action` to `actions.json` when that file holds everything the journal had before this push (it names the
 * live journal up to `before`, or an older one while the live journal holds no op yet), and records that the new
 * file absorbed the journal up to `after`. False when it does not (then the whole queue must be folded). The
 * previous file is not kept as `.bak`: the journal still holds every op after the backup's point. Caller holds the
 * lock.
 */
function addToSnapshot(paths: QueuePaths, fd: number, action: Action, before: number, after: number): boolean {
  let file: Buffer;
  try {
    file = readFileSync(paths.snapshot);
  } catch {
    return false;
  }
  const head = Buffer.alloc(Math.min(before, 512));
  const n = readSync(fd, head, 0, head.length, 0);
  const nl = head.subarray(0, n).indexOf(0x0a);
  const header = nl >= 0 ? decodeHeader(head.toString('utf8', 0, nl)) : undefined;
  if (!header) return false;
  // Buffers, not strings: a queue of 10,000 actions is a few MB, and decoding it would cost more than the write.
  const tail = /"journal":("(?:[^"\\]|\\.)*"),"journalOffset":(\d+)\}\n$/.exec(file.toString('utf8', Math.max(0, file.length - 300)));
  if (!tail) return false;
  let absorbed: string;
  try {
    absorbed = JSON.parse(tail[1]!) as string;
  } catch {
    return false;
  }
  const upToDate = absorbed === header.id ? Number(tail[2]) === before : before === nl + 1;
  if (!upToDate) return false;
  // The format encodeSnapshot writes: one action per line, so the actions array ends at the first line "],".
  const entry = JSON.stringify(action);
  const rest = file.subarray(0, file.length - Buffer.byteLength(tail[0]));
  const end = Buffer.from(`"journal":${JSON.stringify(header.id)},"journalOffset":${after}}\n`);
  let parts: Buffer[];
  if (rest.subarray(0, EMPTY.length).equals(EMPTY)) parts = [Buffer.from(`{"actions":[\n${entry}\n],\n`), rest.subarray(EMPTY.length), end];
  else {
    const at = rest.subarray(0, OPEN.length).equals(OPEN) ? rest.indexOf(CLOSE) : -1;
    if (at < 0) return false;
    parts = [rest.subarray(0, at), Buffer.from(`,\n${entry}`), rest.subarray(at), end];
  }
  writeFileAtomic(paths.snapshot, paths.home, Buffer.concat(parts));
  return true;
}

const EMPTY = Buffer.from('{"actions":[],\n');
const OPEN = Buffer.from('{"actions":[\n');
const CLOSE = Buffer.from('\n],\n"completed":[');

/**
 * Reads the whole queue and folds the journal into `actions.json` (a non-owner may while no runner is alive). A
 * damaged file is left alone: the runner's next start reports it to the operator and repairs it.
 */
async function foldQueue(home: string): Promise<void> {
  const { ActionQueue } = await import('./queue.js');
  const quiet = () => {};
  const log = { debug: quiet, info: quiet, warn: quiet, error: quiet };
  const probe = await ActionQueue.open({ home, owner: false, readOnly: true, quietCompactMs: 0, log });
  const clean = probe.problems.length === 0;
  await probe.close();
  if (!clean) return;
  const q = await ActionQueue.open({ home, owner: false, quietCompactMs: 0, log });
  await q.close();
}
