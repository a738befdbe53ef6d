/**
 * Reading the queue back at open: the base (`actions.json`, or `actions.json.bak` when that is damaged) plus the
 * journal ops it has not absorbed. Damaged files are reported and kept aside as `<name>.corrupt-<time>`; nothing
 * is deleted, and whatever can still be read is used.
 */
import { copyFileSync, existsSync, readFileSync, renameSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Logger } from '../../sdk/types.js';
import { errorMessage } from '../errors.js';
import { fsyncDir, type QueuePaths } from './journal-file.js';
import { parseJournal } from './journal-reader.js';
import type { QueueOp } from './ops.js';
import { emptySnapshot, readSnapshot, type SnapshotFile } from './snapshot-file.js';
import type { QueueSnapshot } from './store.js';

export interface RecoveryContext {
  paths: QueuePaths;
  log: Logger;
  /** May move or copy damaged files aside (the owner, or anyone while no owner runs). */
  repair: boolean;
  /** Problems for a human; each is also logged. */
  problems: string[];
  /** Set when the files should be rewritten from memory (something was damaged). */
  needsRepair: boolean;
}

export interface JournalOps {
  ops: QueueOp[];
  journalId: string;
  /** Offset just past the last complete line. */
  end: number;
}

const stamp = () => new Date().toISOString().replace(/[:.]/g, '-');

function report(ctx: RecoveryContext, msg: string): void {
  ctx.problems.push(msg);
  ctx.log.error(`Queue: ${msg}`);
}

/** Moves (or copies) a damaged file next to itself as `<name>.corrupt-<time>`; returns where it now is. */
export function keepAside(ctx: RecoveryContext, path: string, how: 'move' | 'copy'): string {
  if (!ctx.repair) return path;
  let target = `${path}.corrupt-${stamp()}`;
  for (let i = 1; existsSync(target); i++) target = `${path}.corrupt-${stamp()}-${i}`;
  try {
    if (how === 'move') renameSync(path, target);
    else copyFileSync(path, target);
    fsyncDir(ctx.paths.home);
  } catch (e) {
    ctx.log.error(`Queue: could not keep ${path} aside: ${errorMessage(e)}`);
    return path;
  }
  return target;
}

/** The base to build on, and whether it came from the backup (then journal.bak must be replayed as well). */
export function recoverBase(ctx: RecoveryContext): { base: SnapshotFile | undefined; fromBackup: boolean } {
  const main = readSnapshot(ctx.paths.snapshot);
  if (main.kind === 'ok') {
    if (main.invalid.length) {
      const kept = keepAside(ctx, ctx.paths.snapshot, 'copy');
      report(
        ctx,
        `actions.json has ${main.invalid.length} unreadable entries, skipped (the file is kept as ${basename(kept)}): ${main.invalid.slice(0, 5).join('; ')}`,
      );
      ctx.needsRepair = true;
    }
    return { base: main.file, fromBackup: false };
  }
  const bak = readSnapshot(ctx.paths.snapshotBak);
  if (main.kind === 'missing' && bak.kind === 'missing') return { base: undefined, fromBackup: false };
  ctx.needsRepair = true;
  if (main.kind === 'corrupt') {
    const kept = keepAside(ctx, ctx.paths.snapshot, 'move');
    report(
      ctx,
      `actions.json is corrupt (${main.reason}); it is kept as ${basename(kept)} and the queue is rebuilt from actions.json.bak and the journals.`,
    );
  } else {
    report(ctx, 'actions.json is missing; the queue is rebuilt from actions.json.bak and the journals.');
  }
  if (bak.kind === 'ok') return { base: bak.file, fromBackup: true };
  report(
    ctx,
    `actions.json.bak is ${bak.kind === 'missing' ? 'missing' : `corrupt (${bak.reason})`} too: only the actions recorded in the journals ` +
      'could be recovered; the kept-aside file holds the rest.',
  );
  return { base: undefined, fromBackup: true };
}

/**
 * Ops of one journal that `base` has not absorbed: a journal the base names is read from the recorded offset,
 * any other one from its start. Corrupt lines are skipped and reported; a torn last line is only warned about.
 */
export function journalOps(ctx: RecoveryContext, buf: Buffer, name: string, base: SnapshotFile | undefined): JournalOps {
  if (buf.length === 0) return { ops: [], journalId: '', end: 0 };
  const whole = parseJournal(buf);
  const absorbed = whole.header && base?.journal === whole.header.id ? base.journalOffset : undefined;
  const p = absorbed === undefined ? whole : parseJournal(buf, absorbed);
  if (!p.header || p.bad.length) {
    const kept = keepAside(ctx, join(ctx.paths.home, name), 'copy');
    const what = p.bad.map((b) => `line ${b.line}: ${b.reason}`);
    if (!p.header) what.unshift('line 1: not a journal header');
    report(
      ctx,
      `${name} has corrupt lines, skipped; its other ops were applied and the file is kept as ${basename(kept)}: ${what.slice(0, 5).join('; ')}`,
    );
    ctx.needsRepair = true;
  }
  if (p.partial) {
    ctx.log.warn(
      `Queue: ignored the truncated last line of ${name} (${p.partial} bytes): a write cut short by a crash, never acknowledged.`,
    );
  }
  return { ops: p.ops, journalId: p.header?.id ?? '', end: p.end };
}

export function readIfExists(path: string): Buffer | undefined {
  try {
    return readFileSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/**
 * Everything but the live journal: the base, plus journal.bak's ops when the base is the backup one.
 * (The live journal is read by the store through the handle it keeps.)
 */
export function recoverBeforeLive(ctx: RecoveryContext): { base: SnapshotFile | undefined; snapshot: QueueSnapshot; ops: QueueOp[] } {
  const { base, fromBackup } = recoverBase(ctx);
  const snapshot: QueueSnapshot = base
    ? { actions: base.actions, completed: base.completed, failed: base.failed, ...(base.stops ? { stops: base.stops } : {}) }
    : emptySnapshot();
  const ops: QueueOp[] = [];
  if (fromBackup) {
    const bak = readIfExists(ctx.paths.journalBak);
    if (bak) ops.push(...journalOps(ctx, bak, basename(ctx.paths.journalBak), base).ops);
  }
  return { base, snapshot, ops };
}
