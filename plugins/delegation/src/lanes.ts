/**
 * Delegated tasks run as queued actions in their own lane: `delegate:<depth>` for an anonymous sub-task,
 * `agent:<name>` for a named sub-agent's task. The runner carries out one action per lane at a time and lanes side
 * by side (kernel/queue/lanes.ts), so the child runs while the parent's skill call waits for it in the main lane.
 * The child is durable and visible like any action (`GET /api/tasks`, `keel tasks`), has no retries, and its step
 * budget (`metadata.budget.maxSteps`) is enforced by the agent. The parent waits for its settlement (the
 * `actionSettled` hook when this process runs it, else by reading the queue), at most `waitMs`; then, or when the
 * parent is cancelled, the child is cancelled.
 */
import { errorsFor } from '../../../sdk/errors.js';
import type { Action, Json, PluginContext, SkillCallContext } from '../../../sdk/index.js';
import { actorLabel, errorMessage, forbiddenError, isUntrusted } from '../../../sdk/index.js';
import { MAX_DEPTH } from '../manifest.js';
import type { DelegatedTask, DelegationStore } from './store.js';

const coded = errorsFor('delegation');

export interface DelegateRequest {
  task: string;
  maxSteps: number;
  waitMs: number;
  /** Sub-agent name and instructions, when it runs as a sub-agent. */
  agent?: { name: string; instructions: string };
}

export interface DelegateOutcome {
  taskId: string;
  status: 'completed' | 'failed';
  result?: string;
  error?: string;
  steps: number;
  maxSteps: number;
  depth: number;
  lane: string;
  parentId?: string;
  agent?: string;
}

/** How often a waiting parent reads the queue when the child may run in another process. */
const POLL_MS = 200;

/** Depth of the action a skill call belongs to: 0 for an ordinary action, n for a delegated task at depth n. */
export function depthOf(action: Action | undefined): number {
  const d = (action?.metadata?.delegation as { depth?: unknown } | undefined)?.depth;
  return typeof d === 'number' && Number.isInteger(d) && d >= 0 ? d : 0;
}

/** Lanes of the delegation chain above (and including) this action. */
function laneChain(action: Action | undefined): string[] {
  const chain = (action?.metadata?.delegation as { lanes?: unknown } | undefined)?.lanes;
  return Array.isArray(chain) ? chain.filter((l): l is string => typeof l === 'string') : [];
}

export function childTaskText(req: DelegateRequest, parentId: string | undefined, depth: number): string {
  const lines = [
    `You are a sub-agent at delegation depth ${depth}${parentId ? `, working for action ${parentId}` : ''}. ` +
      `Your final answer goes back to the agent that delegated this task, not to a person. You have at most ${req.maxSteps} steps: ` +
      'use the tools you need, then reply with a short, complete final answer.',
  ];
  if (depth >= MAX_DEPTH) lines.push('You cannot delegate further (delegation depth limit reached).');
  if (req.agent) lines.push(`Your name is ${req.agent.name}. Your standing instructions:\n${req.agent.instructions}`);
  lines.push(`Task:\n${req.task}`);
  return lines.join('\n\n');
}

export function laneFor(req: Pick<DelegateRequest, 'agent'>, depth: number): string {
  return req.agent ? `agent:${req.agent.name}` : `delegate:${depth}`;
}

interface Waiter {
  settle(a: Action): void;
}

export class LaneDelegator {
  /** Model calls that asked for tools, per child run in this process (for the record). */
  private readonly steps = new Map<string, number>();
  private readonly waiters = new Map<string, Waiter>();
  private stopping = false;

  constructor(
    private readonly ctx: PluginContext,
    private readonly store: DelegationStore,
  ) {
    ctx.hooks.tap('thinking', (e) => {
      if (e.actionId && this.steps.has(e.actionId)) this.steps.set(e.actionId, this.steps.get(e.actionId)! + 1);
    });
    ctx.hooks.tap('actionStarted', (a) => {
      if (!this.isChild(a)) return;
      this.steps.set(a.id, 0);
      this.patch(a.id, { status: 'running', startedAt: new Date().toISOString() });
    });
    ctx.hooks.tap('actionSettled', (a, o) => {
      if (!this.isChild(a)) return;
      const steps = this.steps.get(a.id);
      this.steps.delete(a.id);
      const failed = o.status !== 'completed';
      this.patch(a.id, {
        status: failed ? 'failed' : 'completed',
        ...(steps !== undefined ? { steps: failed ? steps : steps + 1 } : {}),
        settledAt: new Date().toISOString(),
        ...(failed ? { error: o.detail ?? o.status } : { result: o.detail ?? a.result ?? '' }),
      });
      this.waiters.get(a.id)?.settle({
        ...a,
        status: failed ? 'failed' : 'completed',
        ...(failed ? { error: o.detail ?? o.status } : { result: o.detail ?? a.result ?? '' }),
      });
    });
  }

  private isChild(a: Action): boolean {
    return typeof a.metadata?.delegation === 'object' && a.metadata.delegation !== null && typeof a.metadata.lane === 'string';
  }

  private patch(id: string, patch: Partial<DelegatedTask>): void {
    try {
      this.store.patchTask(id, patch);
    } catch (e) {
      this.ctx.log.warn(`Delegation: could not record ${id}: ${errorMessage(e)}`);
    }
  }

  /** Refusals that apply before anything is recorded or queued. */
  check(call: SkillCallContext, agent?: string): { depth: number } {
    const depth = depthOf(call.action) + 1;
    if (depth > MAX_DEPTH) {
      throw forbiddenError(
        `Delegation refused: this is already a sub-task at depth ${depth - 1}, and sub-tasks may nest at most ${MAX_DEPTH} levels deep. Do the work yourself.`,
      );
    }
    if (agent) {
      const lane = `agent:${agent}`;
      const own = typeof call.action?.metadata?.lane === 'string' ? call.action.metadata.lane : undefined;
      if (own === lane || laneChain(call.action).includes(lane)) {
        // Its lane runs one task at a time and is busy with the caller (or an ancestor): waiting would never end.
        throw forbiddenError(
          `Delegation refused: sub-agent "${agent}" is already working on this chain of tasks (its lane runs one task at a time). Do the work yourself or use another sub-agent.`,
        );
      }
    }
    const info = this.ctx.use('kernel:info');
    if (info && !info.agentRunning()) {
      throw coded(
        'KEEL_E_UNAVAILABLE',
        'No agent runner is running on this Keel home (start it with `keel run`), so a sub-task would only wait in the queue.',
      );
    }
    return { depth };
  }

  async run(req: DelegateRequest, call: SkillCallContext, depth: number): Promise<DelegateOutcome> {
    if (this.stopping) throw coded('KEEL_E_UNAVAILABLE', 'The delegation plugin is stopping.');
    // A damaged record file stops delegation before anything is queued (it is never overwritten).
    this.store.read();
    if (this.store.problem) throw coded('KEEL_E_UNAVAILABLE', `Delegation records cannot be written: ${this.store.problem}.`);
    const parent = call.action;
    const lane = laneFor(req, depth);
    const untrusted = isUntrusted(call.actor);
    const chain = [...laneChain(parent), ...(typeof parent?.metadata?.lane === 'string' ? [parent.metadata.lane] : ['main'])];
    const child = await this.ctx.queue.push({
      task: childTaskText(req, parent?.id, depth),
      priority: parent?.priority ?? 5,
      // The parent's source keeps the trust rules of where the work came from; the child has no replyTo.
      source: parent?.source ?? call.actor.channel,
      // The caller's whole actor chain: admin rights carry over, an untrusted link keeps the run untrusted.
      actor: call.actor,
      maxRetries: 0,
      // A child nobody waits for any more is cancelled; the TTL is the backstop if that cancel is lost.
      ttl: req.waitMs + 60_000,
      metadata: {
        lane,
        budget: { maxSteps: req.maxSteps },
        delegation: {
          depth,
          lanes: chain,
          ...(parent ? { parentId: parent.id } : {}),
          ...(req.agent ? { agent: req.agent.name } : {}),
          waiterPid: process.pid,
        } as Json,
        ...(parent ? { parentId: parent.id } : {}),
        ...(untrusted ? { untrusted: true } : {}),
      },
    });
    const id = child.id;
    const record: DelegatedTask = {
      id,
      ...(parent ? { parentId: parent.id } : {}),
      depth,
      lane,
      ...(req.agent ? { agent: req.agent.name } : {}),
      task: req.task,
      status: 'queued',
      steps: 0,
      maxSteps: req.maxSteps,
      createdAt: child.createdAt,
      requestedBy: actorLabel(call.actor),
    };
    // The hooks may already have moved it on (a fast runner): insert without going back.
    try {
      this.store.update((d) => {
        if (!d.tasks.some((t) => t.id === id)) d.tasks.push(record);
      });
    } catch (e) {
      await this.ctx.queue.cancel(id, 'its delegation record could not be written');
      throw e;
    }
    this.ctx.log.info(`Delegated ${id} to lane ${lane} (depth ${depth}${parent ? `, parent ${parent.id}` : ''}, ${req.maxSteps} steps).`);

    const settled = await this.wait(id, req.waitMs, call.signal);
    const outcome: DelegateOutcome = {
      taskId: id,
      status: settled.status === 'completed' ? 'completed' : 'failed',
      steps: 0,
      maxSteps: req.maxSteps,
      depth,
      lane,
      ...(parent ? { parentId: parent.id } : {}),
      ...(req.agent ? { agent: req.agent.name } : {}),
    };
    if (outcome.status === 'completed') outcome.result = settled.result ?? '';
    else outcome.error = settled.error ?? 'unknown reason';
    const rec = this.store.read().tasks.find((t) => t.id === id);
    outcome.steps = rec?.steps ?? 0;
    if (rec && (rec.status === 'queued' || rec.status === 'running')) {
      this.patch(id, {
        status: outcome.status,
        settledAt: new Date().toISOString(),
        ...(outcome.error ? { error: outcome.error } : { result: outcome.result ?? '' }),
      });
    }
    return outcome;
  }

  /** Resolves with the settled child; cancels it when the wait ends first (time, parent cancelled, stop). */
  private wait(id: string, waitMs: number, signal: AbortSignal): Promise<Action> {
    return new Promise<Action>((resolve) => {
      let done = false;
      const finish = (a: Action) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        clearInterval(poll);
        signal.removeEventListener('abort', onAbort);
        this.waiters.delete(id);
        resolve(a);
      };
      // The parent stops waiting at once (a shutdown must not wait for the child); the child is cancelled behind it.
      const giveUp = (why: string) => {
        const now = this.ctx.queue.get(id);
        if (now && (now.status === 'completed' || now.status === 'failed')) return finish(now);
        finish({ ...(now ?? ({ id } as Action)), status: 'failed', error: why } as Action);
        void this.ctx.queue.cancel(id, why).catch((e) => this.ctx.log.warn(`Delegation: could not cancel ${id}: ${errorMessage(e)}`));
      };
      const onAbort = () => giveUp('the delegating action was cancelled');
      const timer = setTimeout(() => giveUp(`timed out after ${waitMs} ms`), waitMs);
      // Another process's runner may carry it out: its settlement reaches this process through the queue.
      const poll = setInterval(() => {
        const a = this.ctx.queue.get(id);
        if (!a) finish({ id, status: 'failed', error: 'the sub-task was removed from the queue' } as Action);
        else if (a.status === 'completed' || a.status === 'failed') finish(a);
      }, POLL_MS);
      timer.unref?.();
      poll.unref?.();
      this.waiters.set(id, { settle: finish });
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Cancels the queued or running tasks of a sub-agent; resolves with how many. */
  async cancelAgent(name: string): Promise<number> {
    let n = 0;
    for (const t of this.store.read().tasks) {
      if (t.agent !== name || (t.status !== 'queued' && t.status !== 'running')) continue;
      const how = await this.ctx.queue.cancel(t.id, `sub-agent ${name} was stopped`);
      if (how === 'removed' || how === 'stopping') n++;
      if (how === 'removed')
        this.patch(t.id, { status: 'failed', error: `sub-agent ${name} was stopped`, settledAt: new Date().toISOString() });
    }
    return n;
  }

  /**
   * Sub-tasks whose waiting parent is gone (Keel stopped or crashed while a parent waited): nobody will read their
   * answer (the parent action runs again after a restart and delegates anew), so they are cancelled, and records
   * still open are closed.
   */
  async dropOrphans(isAlive: (pid: number) => boolean): Promise<number> {
    let n = 0;
    const orphan = (a: Action | undefined) => {
      const pid = (a?.metadata?.delegation as { waiterPid?: unknown } | undefined)?.waiterPid;
      return !(typeof pid === 'number' && pid !== process.pid && isAlive(pid));
    };
    for (const a of this.ctx.queue.list().pending) {
      if (!this.isChild(a) || !orphan(a)) continue;
      const how = await this.ctx.queue.cancel(a.id, 'orphaned: the action that delegated it stopped waiting');
      if (how === 'removed') n++;
    }
    for (const t of this.store.read().tasks) {
      if (t.status !== 'queued' && t.status !== 'running') continue;
      const a = this.ctx.queue.get(t.id);
      if (a && !orphan(a)) continue;
      if (a && a.status !== 'completed' && a.status !== 'failed') continue; // runs elsewhere; settles there
      this.patch(
        t.id,
        a
          ? {
              status: a.status as 'completed' | 'failed',
              ...(a.result !== undefined ? { result: a.result } : {}),
              ...(a.error !== undefined ? { error: a.error } : {}),
              settledAt: a.settledAt ?? new Date().toISOString(),
            }
          : { status: 'failed', error: 'interrupted: the process that waited for it stopped', settledAt: new Date().toISOString() },
      );
    }
    return n;
  }

  stopAll(): void {
    this.stopping = true;
    for (const [id, w] of this.waiters) w.settle({ id, status: 'failed', error: 'the delegation plugin is stopping' } as Action);
  }
}
