/**
 * Fires due schedules into the queue. Only the process that runs the agent fires (kernel:info runner() is
 * defined there), so `keel gateway` or a CLI call on the same home can add and cancel schedules but never fires
 * them twice. The loop wakes at the next due time, and at least once a second to notice changes that another
 * process wrote to schedules.json. Timers are unref'd and all cleared in stop().
 */
import type { Logger, PluginContext } from '../../../sdk/index.js';
import { nextCronRun } from './plan.js';
import type { Schedule, ScheduleStore } from './store.js';
import { errorMessage } from '../../../sdk/errors.js';

/** The longest sleep between two looks at schedules.json. */
export const POLL_MS = 1000;

export class ScheduleEngine {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private activated = false;
  private busy = false;

  constructor(
    private readonly ctx: PluginContext,
    private readonly store: ScheduleStore,
    private readonly log: Logger,
  ) {}

  /** Whether this process runs the agent (and so fires schedules). */
  active(): boolean {
    return this.ctx.use('kernel:info')?.runner() !== undefined;
  }

  start(): void {
    // The runner is created after plugins start, so the first look comes on the next turn.
    this.arm(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Re-check now (a schedule was added or cancelled in this process). */
  poke(): void {
    if (!this.stopped) this.arm(0);
  }

  private arm(ms: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), Math.max(0, ms));
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    this.timer = undefined;
    if (this.stopped) return;
    if (this.busy) return this.arm(50);
    this.busy = true;
    let wait = POLL_MS;
    try {
      this.store.reload();
      // A damaged schedules.json was reported once; nothing fires until it is fixed (it is never overwritten).
      if (this.active() && !this.store.problem) {
        if (!this.activated) {
          this.activated = true;
          this.resumeRecurring();
        }
        await this.fireDue();
        const next = this.store.list().reduce((m, s) => Math.min(m, Date.parse(s.nextRunAt)), Infinity);
        wait = Math.min(POLL_MS, Math.max(0, next - Date.now()));
      }
    } catch (e) {
      this.log.error(`Scheduler: ${errorMessage(e)}`);
    } finally {
      this.busy = false;
    }
    this.arm(wait);
  }

  /**
   * At start: recurring schedules whose run passed while Keel was down resume at their next run (missed runs
   * are skipped). One-shots are left alone: they fire once on the first tick.
   */
  private resumeRecurring(): void {
    const now = new Date();
    const overdue = this.store.list().filter((s) => s.kind === 'cron' && Date.parse(s.nextRunAt) < now.getTime());
    if (overdue.length === 0) return;
    this.store.update((items) => {
      for (let i = items.length - 1; i >= 0; i--) {
        const s = items[i]!;
        if (s.kind !== 'cron' || Date.parse(s.nextRunAt) >= now.getTime()) continue;
        const next = safeNext(s, now);
        if (next) s.nextRunAt = next.toISOString();
        else items.splice(i, 1);
      }
    });
    this.log.info(`Scheduler: ${overdue.length} recurring schedule(s) missed runs while Keel was down; they resume at their next run.`);
  }

  private async fireDue(): Promise<void> {
    const now = new Date();
    const due = this.store.list().filter((s) => Date.parse(s.nextRunAt) <= now.getTime());
    for (const s of due) {
      if (this.stopped) return;
      // Persist first: a crash right after this loses at most this one run, never fires it twice.
      const fired = this.store.update((items) => {
        const i = items.findIndex((x) => x.id === s.id);
        if (i < 0) return undefined; // cancelled meanwhile
        const cur = items[i]!;
        if (Date.parse(cur.nextRunAt) > now.getTime()) return undefined;
        const copy = { ...cur };
        if (cur.kind === 'once') {
          items.splice(i, 1);
        } else {
          const next = safeNext(cur, now);
          cur.lastRunAt = now.toISOString();
          cur.runs = (cur.runs ?? 0) + 1;
          if (next) cur.nextRunAt = next.toISOString();
          else items.splice(i, 1);
        }
        return copy;
      });
      if (!fired) continue;
      try {
        const action = await this.ctx.queue.push({
          task: fired.task,
          priority: fired.priority,
          source: 'scheduler',
          actor: fired.actor,
          metadata: { scheduleId: fired.id },
        });
        this.log.info(`Scheduler: ${fired.id} fired as ${action.id}.`);
        if (fired.kind === 'cron') {
          try {
            this.store.update((items) => {
              const cur = items.find((x) => x.id === fired.id);
              if (cur) cur.lastActionId = action.id;
            });
          } catch {
            /* bookkeeping only */
          }
        }
      } catch (e) {
        this.log.error(`Scheduler: ${fired.id} could not be queued: ${errorMessage(e)}`);
      }
    }
  }
}

function safeNext(s: Schedule, after: Date): Date | null {
  try {
    return s.cron ? nextCronRun(s.cron, s.timezone, after) : null;
  } catch {
    return null;
  }
}
