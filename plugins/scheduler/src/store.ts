/**
 * $KEEL_HOME/schedules.json: the persisted schedules. Every change re-reads the file, changes it and replaces it
 * atomically (temp file + fsync + rename), synchronously, so a crash leaves the old or the new file, and two
 * changes in this process never interleave. Another process (the gateway, a CLI call) may add or cancel
 * schedules; the process running the agent notices by the file's modification time.
 */
import { errorsFor } from '../../../sdk/errors.js';
import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Actor } from '../../../sdk/index.js';
import { errorMessage } from '../../../sdk/errors.js';
import { withFileLockSync } from '../../../sdk/file-lock.js';
import { fileStamp } from '../../../sdk/file-stamp.js';

const coded = errorsFor('scheduler');

export interface Schedule {
  /** `sch_<epoch_ms>_<hex>` */
  id: string;
  task: string;
  priority: number;
  kind: 'once' | 'cron';
  /** kind 'cron': the expression and its timezone. */
  cron?: string;
  timezone?: string;
  /** ISO time of the next run. */
  nextRunAt: string;
  createdAt: string;
  /** Who scheduled it: the fired action runs as them. */
  actor: Actor;
  lastRunAt?: string;
  lastActionId?: string;
  runs: number;
}

interface FileShape {
  version: 1;
  schedules: Schedule[];
}

export class ScheduleStore {
  readonly file: string;
  private items: Schedule[] = [];
  private stamp = '';
  problem: string | undefined;

  constructor(home: string) {
    this.file = join(home, 'schedules.json');
    this.reload(true);
  }

  private currentStamp(): string {
    return fileStamp(this.file);
  }

  /** Re-read the file when it changed (or always with `force`). Returns whether it was re-read. */
  reload(force = false): boolean {
    const stamp = this.currentStamp();
    if (!force && stamp === this.stamp) return false;
    this.stamp = stamp;
    if (stamp === 'none') {
      this.items = [];
      return true;
    }
    try {
      const parsed = JSON.parse(readFileSync(this.file, 'utf8')) as Partial<FileShape>;
      this.items = Array.isArray(parsed.schedules) ? parsed.schedules.filter(valid) : [];
      this.problem = undefined;
    } catch (e) {
      // A damaged file is kept as it is (never overwritten with nothing) until a change replaces it.
      this.problem = `${this.file} could not be read: ${errorMessage(e)}`;
      this.items = [];
    }
    return true;
  }

  list(): Schedule[] {
    this.reload();
    return this.items.map((s) => ({ ...s }));
  }

  /** Read, change, write: `fn` edits the array in place. */
  update<T>(fn: (items: Schedule[]) => T): T {
    // Under schedules.json.lock: another process (a separate gateway's skill console) may be changing it too.
    mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 });
    return withFileLockSync(
      `${this.file}.lock`,
      () => {
        this.reload(true);
        if (this.problem) throw coded('KEEL_E_UNAVAILABLE', `${this.problem}; fix or remove it before changing schedules.`);
        const out = fn(this.items);
        this.write();
        return out;
      },
      { what: 'schedule list' },
    );
  }

  private write(): void {
    const data = `${JSON.stringify({ version: 1, schedules: this.items } satisfies FileShape, null, 2)}\n`;
    mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 });
    const tmp = join(dirname(this.file), `.schedules.json.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    const fd = openSync(tmp, 'wx', 0o600);
    try {
      writeSync(fd, data);
      fsyncSync(fd);
    } catch (e) {
      closeSync(fd);
      rmSync(tmp, { force: true });
      throw e;
    }
    closeSync(fd);
    try {
      renameSync(tmp, this.file);
    } catch (e) {
      rmSync(tmp, { force: true });
      throw e;
    }
    this.stamp = this.currentStamp();
  }
}

export function newScheduleId(now = Date.now()): string {
  return `sch_${now}_${randomBytes(4).toString('hex')}`;
}

function valid(s: unknown): s is Schedule {
  if (!s || typeof s !== 'object') return false;
  const o = s as Partial<Schedule>;
  return (
    typeof o.id === 'string' &&
    typeof o.task === 'string' &&
    (o.kind === 'once' || o.kind === 'cron') &&
    typeof o.nextRunAt === 'string' &&
    !Number.isNaN(Date.parse(o.nextRunAt)) &&
    typeof o.actor === 'object' &&
    o.actor !== null
  );
}
