/**
 * Autonomy mode: with autonomyEnabled, every autonomyInterval ms (in the process that runs the agent) one
 * action asks the agent to review its goals, memory and schedule and to decide whether to queue work. At most
 * one autonomy action waits or runs at a time: a review that would pile up behind another is skipped.
 */
import type { Action, Actor, Logger, PluginContext } from '../../../sdk/index.js';
import type { ScheduleStore } from './store.js';
import { errorMessage } from '../../../sdk/errors.js';
import type manifest from '../manifest.js';

export const AUTONOMY_ACTOR: Actor = { kind: 'agent', channel: 'autonomy' };

export class Autonomy {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private lastId: string | undefined;

  constructor(
    private readonly ctx: PluginContext<typeof manifest>,
    private readonly store: ScheduleStore,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.ctx.hooks.tap('configChanged', (e) => {
      if (e.key === 'autonomyEnabled' || e.key === 'autonomyInterval') this.rearm();
    });
    this.rearm();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private enabled(): boolean {
    return this.ctx.config.get('autonomyEnabled');
  }

  private interval(): number {
    return this.ctx.config.get('autonomyInterval');
  }

  private rearm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.stopped || !this.enabled()) return;
    this.timer = setTimeout(() => void this.fire(), this.interval());
    this.timer.unref();
  }

  private pendingAutonomy(): Action | undefined {
    if (this.lastId) {
      const a = this.ctx.queue.get(this.lastId);
      if (a && (a.status === 'pending' || a.status === 'executing')) return a;
    }
    return this.ctx.queue.list().pending.find((a) => a.source === 'autonomy');
  }

  private async fire(): Promise<void> {
    this.timer = undefined;
    if (this.stopped || !this.enabled()) return;
    try {
      // Only the process running the agent reviews (a gateway-only process would double the work).
      if (this.ctx.use('kernel:info')?.runner() === undefined) return;
      const waiting = this.pendingAutonomy();
      if (waiting) {
        this.log.info(`Autonomy: ${waiting.id} is still ${waiting.status}; this review is skipped (one autonomy action at a time).`);
        return;
      }
      const a = await this.ctx.queue.push({
        task: this.reviewTask(),
        priority: 3,
        source: 'autonomy',
        actor: AUTONOMY_ACTOR,
        metadata: { autonomy: true },
      });
      this.lastId = a.id;
      this.log.info(`Autonomy: review queued as ${a.id}.`);
    } catch (e) {
      this.log.error(`Autonomy: the review could not be queued: ${errorMessage(e)}`);
    } finally {
      this.rearm();
    }
  }

  /** The review prompt: goals, memory, schedule, queue, and the channels it may speak on. */
  reviewTask(): string {
    const lines: string[] = [
      'Autonomy review. Nobody asked for this: it is your periodic self-review.',
      'Review your goals, your memory and your schedule below, then decide whether there is work worth doing now.',
      'If there is, do it or queue it (schedule_task for later work); if there is nothing useful to do, answer "nothing to do" and stop.',
    ];
    const memory = this.ctx.use('memory');
    if (memory) {
      try {
        const c = memory.counts();
        lines.push(
          `Memory: ${c.short} short, ${c.episodic} episodic, ${c.long} long-term entries (search them with your memory skills for goals and open promises).`,
        );
      } catch {
        lines.push('Memory: not readable right now.');
      }
    } else {
      lines.push('Memory: no memory plugin is running.');
    }
    const schedules = this.store.list().sort((a, b) => a.nextRunAt.localeCompare(b.nextRunAt));
    if (schedules.length === 0) lines.push('Schedule: nothing scheduled.');
    else {
      lines.push(`Schedule (${schedules.length}):`);
      for (const s of schedules.slice(0, 20))
        lines.push(`- ${s.id} ${s.kind === 'cron' ? `cron "${s.cron}"` : 'once'}, next ${s.nextRunAt}: ${s.task.slice(0, 200)}`);
      if (schedules.length > 20) lines.push(`- ... and ${schedules.length - 20} more (list_scheduled_tasks).`);
    }
    const counts = this.ctx.queue.counts();
    lines.push(`Queue: ${counts.pending} waiting, ${counts.failed} unsuccessful.`);
    const allowed = this.ctx.config.get('autonomyAllowedChannels');
    lines.push(
      allowed.length
        ? `On your own you may send messages only on: ${allowed.join(', ')} (and email). Sends to other channels are refused.`
        : 'On your own you may not send chat messages (email only); sends to chat channels are refused.',
    );
    return lines.join('\n');
  }
}
