/**
 * Turning schedule_task arguments into a first run time, with errors a person (or the model) can act on.
 */
import { Cron } from 'croner';
import { errorMessage } from '../../../sdk/errors.js';
import type { SkillArgs } from '../../../sdk/index.js';
import type manifest from '../manifest.js';

/** The arguments of schedule_task, from its schema in the manifest. */
export type ScheduleArgs = SkillArgs<typeof manifest, 'schedule_task'>;

export type Plan = { kind: 'once'; runAt: Date } | { kind: 'cron'; cron: string; timezone?: string; runAt: Date };

export class ScheduleError extends Error {}

export function cronJob(expr: string, timezone?: string): Cron {
  return new Cron(expr, { paused: true, mode: '5-or-6-parts', ...(timezone ? { timezone } : {}) });
}

/** The next run of a cron expression strictly after `after`, or null when it never runs again. */
export function nextCronRun(expr: string, timezone: string | undefined, after: Date): Date | null {
  const job = cronJob(expr, timezone);
  try {
    return job.nextRun(after);
  } finally {
    job.stop();
  }
}

export function plan(args: ScheduleArgs, now: Date): Plan {
  const given = (['at', 'delayMs', 'cron'] as const).filter((k) => args[k] !== undefined);
  if (given.length === 0)
    throw new ScheduleError(
      'Say when: give exactly one of at (ISO 8601 time), delayMs (milliseconds from now) or cron (a cron expression).',
    );
  if (given.length > 1) throw new ScheduleError(`Give exactly one of at, delayMs or cron; got ${given.join(' and ')}.`);
  if (args.timezone !== undefined && args.cron === undefined) {
    throw new ScheduleError('timezone applies only to cron; for a one-shot, put the offset into at (e.g. 2030-01-31T09:00:00+01:00).');
  }
  if (args.at !== undefined) {
    const t = Date.parse(args.at);
    if (Number.isNaN(t)) throw new ScheduleError(`at "${args.at}" is not a valid ISO 8601 time (e.g. 2030-01-31T09:00:00Z).`);
    if (t <= now.getTime())
      throw new ScheduleError(`at ${new Date(t).toISOString()} is in the past (now is ${now.toISOString()}); give a future time.`);
    return { kind: 'once', runAt: new Date(t) };
  }
  if (args.delayMs !== undefined) {
    if (!Number.isFinite(args.delayMs) || args.delayMs < 0) throw new ScheduleError('delayMs must be a number of milliseconds, 0 or more.');
    return { kind: 'once', runAt: new Date(now.getTime() + args.delayMs) };
  }
  const expr = args.cron!.trim().replace(/\s+/g, ' ');
  let next: Date | null;
  try {
    next = nextCronRun(expr, args.timezone, now);
  } catch (e) {
    const why = errorMessage(e);
    if (args.timezone && /timezone/i.test(why))
      throw new ScheduleError(`timezone "${args.timezone}" is not a valid IANA timezone (e.g. Europe/Berlin, America/New_York).`);
    throw new ScheduleError(
      `cron "${args.cron}" is not a valid cron expression: ${why} Use 5 fields (minute hour day month weekday) or 6 (seconds first).`,
    );
  }
  if (!next) throw new ScheduleError(`cron "${args.cron}" never runs (no future time matches it).`);
  return { kind: 'cron', cron: expr, ...(args.timezone ? { timezone: args.timezone } : {}), runAt: next };
}
