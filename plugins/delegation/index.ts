/**
 * Delegation plugin entry: delegate_task, spawn_agent, list_delegations, stop_agent. See docs/delegation.md.
 */
import { errorsFor } from '../../sdk/errors.js';
import { actorLabel, definePlugin, errorMessage, forbiddenError, isPidAlive, type SkillCallContext } from '../../sdk/index.js';
import manifest, { DEFAULT_MAX_STEPS, DEFAULT_MAX_TASKS, DEFAULT_WAIT_MS, MAX_STEPS_CAP, MAX_TASKS_CAP, MAX_WAIT_MS } from './manifest.js';
import { LaneDelegator, type DelegateOutcome } from './src/lanes.js';
import { DelegationStore, type SubAgent } from './src/store.js';

const coded = errorsFor('delegation');

const clamp = (v: number | undefined, def: number, min: number, max: number) =>
  Math.min(max, Math.max(min, Math.floor(typeof v === 'number' && Number.isFinite(v) ? v : def)));

/** What the calling model sees of a delegated task; a failed one is an error result. */
function report(o: DelegateOutcome): DelegateOutcome {
  if (o.status === 'failed') {
    throw coded(
      'KEEL_E_SUBTASK_FAILED',
      `Sub-task ${o.taskId}${o.agent ? ` (agent ${o.agent})` : ''} failed after ${o.steps} of ${o.maxSteps} steps: ${o.error ?? 'unknown reason'}.`,
    );
  }
  return o;
}

function agentView(a: SubAgent) {
  return {
    name: a.name,
    instructions: a.instructions,
    maxTasks: a.maxTasks,
    tasksRun: a.tasksRun,
    tasksLeft: Math.max(0, a.maxTasks - a.tasksRun),
    maxSteps: a.maxSteps,
    status: a.stoppedAt ? 'stopped' : a.tasksRun >= a.maxTasks ? 'exhausted' : 'active',
    createdAt: a.createdAt,
    createdBy: a.createdBy,
    ...(a.stoppedAt ? { stoppedAt: a.stoppedAt } : {}),
  };
}

export default definePlugin({
  manifest,
  async setup(ctx) {
    const store = new DelegationStore(ctx.home);
    store.read();
    if (store.problem) ctx.log.error(`Delegation: ${store.problem}`);
    const lanes = new LaneDelegator(ctx, store);
    // Tasks whose waiting parent is gone (Keel stopped): the parent runs again and delegates anew.
    if (!store.problem) {
      const dropped = await lanes.dropOrphans(isPidAlive);
      if (dropped) ctx.log.warn(`Delegation: ${dropped} sub-task(s) left by a stopped process were cancelled.`);
    }

    /** Reserve one task of a sub-agent's budget, or refuse. */
    const reserve = (name: string): SubAgent => {
      const out = store.update((d) => {
        const a = d.agents.find((x) => x.name === name);
        if (!a) return `No sub-agent is named "${name}" (create it with spawn_agent; see list_delegations).`;
        if (a.stoppedAt) return `Sub-agent "${name}" was stopped and takes no more tasks.`;
        if (a.tasksRun >= a.maxTasks)
          return `Sub-agent "${name}" has used its task budget (${a.tasksRun} of ${a.maxTasks} tasks); it takes no more tasks. Spawn a new sub-agent or do the work yourself.`;
        a.tasksRun++;
        return { ...a };
      });
      if (typeof out === 'string') throw forbiddenError(out);
      return out;
    };

    const runAs = async (a: SubAgent, task: string, call: SkillCallContext, depth: number, o: { maxSteps?: number; waitMs?: number }) => {
      const outcome = await lanes.run(
        {
          task,
          maxSteps: clamp(o.maxSteps, a.maxSteps, 1, MAX_STEPS_CAP),
          waitMs: clamp(o.waitMs, DEFAULT_WAIT_MS, 1000, MAX_WAIT_MS),
          agent: { name: a.name, instructions: a.instructions },
        },
        call,
        depth,
      );
      return { ...outcome, tasksLeft: Math.max(0, a.maxTasks - a.tasksRun) };
    };

    ctx.skills.register('delegate_task', async (args, call) => {
      const { depth } = lanes.check(call, args.agent);
      if (args.agent) return report(await runAs(reserve(args.agent), args.task, call, depth, args));
      return report(
        await lanes.run(
          {
            task: args.task,
            maxSteps: clamp(args.maxSteps, DEFAULT_MAX_STEPS, 1, MAX_STEPS_CAP),
            waitMs: clamp(args.waitMs, DEFAULT_WAIT_MS, 1000, MAX_WAIT_MS),
          },
          call,
          depth,
        ),
      );
    });

    ctx.skills.register('spawn_agent', async (args, call) => {
      const { depth } = lanes.check(call, args.tasks?.length ? args.name : undefined);
      const maxTasks = clamp(args.maxTasks, DEFAULT_MAX_TASKS, 1, MAX_TASKS_CAP);
      const tasks = args.tasks ?? [];
      const created = store.update((d) => {
        const existing = d.agents.find((x) => x.name === args.name);
        if (existing && !existing.stoppedAt)
          return `A sub-agent named "${args.name}" exists already; give it tasks with delegate_task {agent: "${args.name}"}, or stop_agent it first.`;
        const a: SubAgent = {
          name: args.name,
          instructions: args.instructions,
          maxTasks,
          tasksRun: 0,
          maxSteps: clamp(args.maxSteps, DEFAULT_MAX_STEPS, 1, MAX_STEPS_CAP),
          createdAt: new Date().toISOString(),
          createdBy: actorLabel(call.actor),
        };
        d.agents = d.agents.filter((x) => x.name !== args.name);
        d.agents.push(a);
        return a;
      });
      if (typeof created === 'string') throw forbiddenError(created);
      const results: Array<Record<string, unknown>> = [];
      for (const task of tasks) {
        let a: SubAgent;
        try {
          a = reserve(args.name);
        } catch (e) {
          results.push({ task, status: 'refused', error: errorMessage(e) });
          continue;
        }
        const o = await runAs(a, task, call, depth, args);
        results.push({ task, ...o });
      }
      const now = store.read().agents.find((x) => x.name === args.name);
      return {
        agent: agentView(now ?? created),
        ...(tasks.length ? { results } : {}),
        message: `Sub-agent "${args.name}" has a budget of ${maxTasks} tasks${tasks.length ? `; ran ${results.filter((r) => r.status !== 'refused').length} now` : ''}. Give it more with delegate_task {agent: "${args.name}", task}.`,
      };
    });

    ctx.skills.register('list_delegations', (args) => {
      const d = store.read();
      const tasks = d.tasks
        .filter((t) => (args.parentId ? t.parentId === args.parentId : true) && (args.agent ? t.agent === args.agent : true))
        .reverse()
        .slice(0, clamp(args.limit, 20, 1, 200));
      const agents = d.agents.filter((a) => (args.agent ? a.name === args.agent : true)).map(agentView);
      return { count: tasks.length, tasks, agents };
    });

    ctx.skills.register('stop_agent', async ({ name }) => {
      const out = store.update((d) => {
        const a = d.agents.find((x) => x.name === name);
        if (!a) return undefined;
        a.stoppedAt ??= new Date().toISOString();
        return { ...a };
      });
      if (!out) throw coded('KEEL_E_NOT_FOUND', `No sub-agent is named "${name}".`);
      const cancelled = await lanes.cancelAgent(name);
      return { agent: agentView(out), cancelledTasks: cancelled };
    });

    return {
      stop() {
        lanes.stopAll();
      },
      health() {
        return store.problem ? { ok: false, message: store.problem } : { ok: true };
      },
    };
  },
});
