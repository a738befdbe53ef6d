/**
 * `queue.owner`: the pid of the process that owns the queue (the runner). Only the owner takes actions and
 * compacts; everyone else only appends. Node built-ins only.
 */
import { readFileSync, unlinkSync } from 'node:fs';
import { ErrorCodes, KeelError } from '../errors.js';
import { type QueuePaths, queuePaths, writeFileAtomic } from './journal-file.js';
import { isPidAlive } from './lock.js';

/** Homes owned by a queue open in this very process (the pid check cannot tell two of them apart). */
const ownedHere = new Set<string>();

/** Pid named in the owner file, if any. */
export function ownerPid(home: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(queuePaths(home).owner, 'utf8'), 10);
    return Number.isNaN(pid) ? undefined : pid;
  } catch {
    return undefined;
  }
}

/** True when a live process (this one included) owns the queue in `home`. */
export function isOwnerAlive(home: string): boolean {
  const pid = ownerPid(home);
  return pid !== undefined && isPidAlive(pid);
}

/** Claims ownership; a file left by a dead owner is taken over. Caller holds the queue lock. */
export function claimOwner(paths: QueuePaths): void {
  const pid = ownerPid(paths.home);
  if (ownedHere.has(paths.home) || (pid !== undefined && pid !== process.pid && isPidAlive(pid))) {
    throw new KeelError(
      ErrorCodes.ALREADY_RUNNING,
      `Another keel process (pid ${pid ?? process.pid}) already runs the queue in ${paths.home}. Stop it first (keel stop).`,
      { pid, home: paths.home },
    );
  }
  writeFileAtomic(paths.owner, paths.home, `${process.pid}\n`);
  ownedHere.add(paths.home);
}

/** Gives ownership up, unless another process has since claimed it. */
export function releaseOwner(paths: QueuePaths): void {
  ownedHere.delete(paths.home);
  if (ownerPid(paths.home) !== process.pid) return;
  try {
    unlinkSync(paths.owner);
  } catch {
    // already gone
  }
}
