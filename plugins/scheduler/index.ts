/**
 * Scheduler plugin entry: schedule_task / list_scheduled_tasks / cancel_scheduled_task, the firing loop,
 * autonomy mode and the autonomy cross-channel rule. See docs/scheduling.md.
 */
import { actorLabel, definePlugin, type Actor, errorMessage } from '../../sdk/index.js';
import manifest from './manifest.js';
import { identityKey, isAdmin, storedActor } from './src/actors.js';
import { Autonomy } from './src/autonomy.js';
import { crossChannelVeto } from './src/cross-channel.js';
import { ScheduleEngine } from './src/engine.js';
import { plan, ScheduleError } from './src/plan.js';
import { newScheduleId, ScheduleStore, type Schedule } from './src/store.js';

function view(s: Schedule) {
  return {
    id: s.id,
    task: s.task,
    priority: s.priority,
    kind: s.kind,
    ...(s.cron ? { cron: s.cron } : {}),
    ...(s.timezone ? { timezone: s.timezone } : {}),
    nextRunAt: s.nextRunAt,
    createdAt: s.createdAt,
    runs: s.runs,
    ...(s.lastRunAt ? { lastRunAt: s.lastRunAt } : {}),
    scheduledBy: actorLabel(s.actor),
  };
}

export default definePlugin({
  manifest,
  setup(ctx) {
    const store = new ScheduleStore(ctx.home);
    if (store.problem) ctx.log.error(`Scheduler: ${store.problem}`);
    const engine = new ScheduleEngine(ctx, store, ctx.log);
    const autonomy = new Autonomy(ctx, store, ctx.log);
    const mine = (s: Schedule, actor: Actor) => isAdmin(ctx, actor) || identityKey(s.actor) === identityKey(actor);

    ctx.skills.register('schedule_task', (args, call) => {
      const now = new Date();
      let p;
      try {
        p = plan(args, now);
      } catch (e) {
        if (e instanceof ScheduleError) throw e;
        throw new ScheduleError(errorMessage(e));
      }
      const s: Schedule = {
        id: newScheduleId(now.getTime()),
        task: args.task,
        priority: args.priority ?? 5,
        kind: p.kind,
        ...(p.kind === 'cron' ? { cron: p.cron, ...(p.timezone ? { timezone: p.timezone } : {}) } : {}),
        nextRunAt: p.runAt.toISOString(),
        createdAt: now.toISOString(),
        actor: storedActor(call.actor),
        runs: 0,
      };
      store.update((items) => void items.push(s));
      engine.poke();
      const runner = engine.active() ? '' : ' It fires in the process that runs the agent (keel run); none runs in this process.';
      return {
        scheduled: view(s),
        message: `Scheduled ${s.id}: ${s.kind === 'cron' ? `cron "${s.cron}"` : 'once'}, next run ${s.nextRunAt}.${runner}`,
      };
    });

    ctx.skills.register('list_scheduled_tasks', (_args, call) => {
      const all = store.list().filter((s) => mine(s, call.actor));
      all.sort((a, b) => a.nextRunAt.localeCompare(b.nextRunAt));
      return { count: all.length, schedules: all.map(view) };
    });

    ctx.skills.register('cancel_scheduled_task', ({ id }, call) => {
      const removed = store.update((items) => {
        const i = items.findIndex((s) => s.id === id);
        if (i < 0) return 'missing' as const;
        if (!mine(items[i]!, call.actor)) return 'forbidden' as const;
        return items.splice(i, 1)[0]!;
      });
      if (removed === 'missing') throw new ScheduleError(`No scheduled task has id ${id} (see list_scheduled_tasks).`);
      if (removed === 'forbidden')
        throw new ScheduleError(`Scheduled task ${id} belongs to someone else; only they or an admin can cancel it.`);
      engine.poke();
      return { cancelled: view(removed) };
    });

    ctx.hooks.tap('beforeSkill', (call) => crossChannelVeto(call, ctx));

    engine.start();
    autonomy.start();
    return {
      stop() {
        engine.stop();
        autonomy.stop();
      },
      health() {
        return store.problem ? { ok: false, message: store.problem } : { ok: true };
      },
    };
  },
});
