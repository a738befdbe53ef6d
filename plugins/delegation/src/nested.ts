/**
 * Nested runs: a delegated task runs in-process through the `agent` capability while the parent's skill call
 * waits for it. The runner works one queued action at a time, so a child pushed to the queue and awaited here
 * would never start; a nested run needs no runner. Its step budget is enforced from outside the agent:
 * every model call that asks for tools fires `thinking` with the run's id; when the budget is reached the run
 * is stopped (its signal aborted, its further skill calls vetoed).
 */
import type { Action, Actor, AgentCapability, Json, PluginContext, SkillCallContext } from '../../../sdk/index.js';
import { forbiddenError } from '../../../sdk/index.js';
import { MAX_DEPTH } from '../manifest.js';
import type { DelegatedTask, DelegationStore } from './store.js';
import { newTaskId } from './store.js';

export interface Running {
  id: string;
  maxSteps: number;
  /** Model calls that asked for tools so far. */
  toolSteps: number;
  exhausted: boolean;
  abort: AbortController;
  agent?: string;
}

export interface NestedRequest {
  task: string;
  maxSteps: number;
  waitMs: number;
  /** Sub-agent name and instructions, when it runs as a sub-agent. */
  agent?: { name: string; instructions: string };
}

export interface NestedOutcome {
  taskId: string;
  status: 'completed' | 'failed';
  result?: string;
  error?: string;
  steps: number;
  maxSteps: number;
  depth: number;
  parentId?: string;
  agent?: string;
}

/** Depth of the action a skill call belongs to: 0 for a queued action, n for a nested run at depth n. */
export function depthOf(action: Action | undefined): number {
  const d = (action?.metadata?.delegation as { depth?: unknown } | undefined)?.depth;
  return typeof d === 'number' && Number.isInteger(d) && d >= 0 ? d : 0;
}

/** Whether any link of the actor chain is flagged untrusted. */
function chainUntrusted(actor: Actor | undefined): boolean {
  for (let cur = actor, i = 0; cur && i < 10; cur = cur.onBehalfOf, i++) if (cur.untrusted === true) return true;
  return false;
}

export function describeActor(actor: Actor | undefined): string {
  let cur = actor;
  for (let i = 0; cur?.kind === 'agent' && cur.onBehalfOf && i < 10; i++) cur = cur.onBehalfOf;
  if (!cur) return 'unknown';
  if (cur.kind === 'operator') return 'operator';
  if (cur.kind === 'agent') return `agent (${cur.channel})`;
  return `${cur.channel}:${cur.userId ?? '?'}`;
}

export function childTaskText(req: NestedRequest, parentId: string | undefined, depth: number): string {
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

export class NestedRunner {
  readonly running = new Map<string, Running>();

  constructor(
    private readonly ctx: PluginContext,
    private readonly store: DelegationStore,
  ) {
    // A model call that asks for tools is one step; reaching the budget stops the run.
    ctx.hooks.tap('thinking', (e) => {
      const r = e.actionId ? this.running.get(e.actionId) : undefined;
      if (!r || r.exhausted) return;
      r.toolSteps++;
      if (r.toolSteps >= r.maxSteps) {
        r.exhausted = true;
        r.abort.abort(new Error(`step budget of ${r.maxSteps} used up without a final answer`));
      }
    });
    ctx.hooks.tap('beforeSkill', (call) => {
      const r = call.actionId ? this.running.get(call.actionId) : undefined;
      if (r && (r.exhausted || r.abort.signal.aborted)) {
        return { reason: `Sub-task ${r.id} is stopped (its step budget of ${r.maxSteps} is used up, it timed out or it was cancelled); ${call.name} was not run.` };
      }
      return undefined;
    });
  }

  /** Refusals that apply before anything is recorded. */
  check(call: SkillCallContext): { depth: number } {
    const depth = depthOf(call.action) + 1;
    if (depth > MAX_DEPTH) {
      throw forbiddenError(
        `Delegation refused: this is already a sub-task at depth ${depth - 1}, and sub-tasks may nest at most ${MAX_DEPTH} levels deep. Do the work yourself.`,
      );
    }
    return { depth };
  }

  async run(req: NestedRequest, call: SkillCallContext, depth: number): Promise<NestedOutcome> {
    const agent = this.ctx.use<AgentCapability>('agent');
    if (!agent) throw new Error('No plugin provides the "agent" capability, so no sub-agent can run.');
    const ready = agent.ready();
    if (!ready.ready) throw new Error(`The agent is not ready: ${ready.reason ?? 'unknown reason'}.`);

    const parent = call.action;
    const now = new Date();
    const id = newTaskId(now.getTime());
    const untrusted = chainUntrusted(call.actor);
    const metadata: Action['metadata'] = {
      retries: 0,
      maxRetries: 0,
      ttl: req.waitMs,
      // The caller's whole actor chain: admin rights carry over, an untrusted link keeps the run untrusted.
      actor: call.actor,
      lane: req.agent ? `agent:${req.agent.name}` : 'delegate',
      budget: { maxSteps: req.maxSteps },
      delegation: { depth, ...(parent ? { parentId: parent.id } : {}), ...(req.agent ? { agent: req.agent.name } : {}) } as Json,
      ...(parent ? { parentId: parent.id } : {}),
      ...(untrusted ? { untrusted: true } : {}),
    };
    const child: Action = {
      id,
      task: childTaskText(req, parent?.id, depth),
      priority: parent?.priority ?? 5,
      status: 'executing',
      createdAt: now.toISOString(),
      // The parent's source keeps the trust rules of where the work came from; the child has no replyTo.
      source: parent?.source ?? call.actor.channel,
      metadata,
    };
    const record: DelegatedTask = {
      id,
      ...(parent ? { parentId: parent.id } : {}),
      depth,
      ...(req.agent ? { agent: req.agent.name } : {}),
      task: req.task,
      status: 'running',
      steps: 0,
      maxSteps: req.maxSteps,
      createdAt: now.toISOString(),
      requestedBy: describeActor(call.actor),
    };
    this.store.update((d) => void d.tasks.push(record));

    const abort = new AbortController();
    const r: Running = { id, maxSteps: req.maxSteps, toolSteps: 0, exhausted: false, abort, ...(req.agent ? { agent: req.agent.name } : {}) };
    this.running.set(id, r);
    const onParentAbort = () => abort.abort(new Error('the delegating action was cancelled'));
    if (call.signal.aborted) onParentAbort();
    else call.signal.addEventListener('abort', onParentAbort, { once: true });
    const timer = setTimeout(() => abort.abort(new Error(`timed out after ${req.waitMs} ms`)), req.waitMs);
    timer.unref?.();
    this.ctx.log.info(`Delegating ${id} (depth ${depth}${parent ? `, parent ${parent.id}` : ''}${req.agent ? `, agent ${req.agent.name}` : ''}, ${req.maxSteps} steps).`);

    let outcome: NestedOutcome;
    try {
      const { result } = await agent.execute(child, { signal: abort.signal });
      outcome = { taskId: id, status: 'completed', result, steps: r.toolSteps + 1, maxSteps: req.maxSteps, depth };
    } catch (e) {
      const reason = abort.signal.aborted && abort.signal.reason instanceof Error ? abort.signal.reason.message : e instanceof Error ? e.message : String(e);
      outcome = { taskId: id, status: 'failed', error: reason, steps: r.toolSteps, maxSteps: req.maxSteps, depth };
    } finally {
      clearTimeout(timer);
      call.signal.removeEventListener('abort', onParentAbort);
      this.running.delete(id);
    }
    if (parent) outcome.parentId = parent.id;
    if (req.agent) outcome.agent = req.agent.name;
    this.store.patchTask(id, {
      status: outcome.status,
      steps: outcome.steps,
      settledAt: new Date().toISOString(),
      ...(outcome.result !== undefined ? { result: outcome.result } : {}),
      ...(outcome.error !== undefined ? { error: outcome.error } : {}),
    });
    this.ctx.log.info(`Delegated ${id} ${outcome.status}${outcome.error ? `: ${outcome.error}` : ''}.`);
    return outcome;
  }

  /** Cancel the running tasks of a sub-agent. */
  cancelAgent(name: string): number {
    let n = 0;
    for (const r of this.running.values()) {
      if (r.agent === name) {
        r.abort.abort(new Error(`sub-agent ${name} was stopped`));
        n++;
      }
    }
    return n;
  }

  stopAll(): void {
    for (const r of this.running.values()) r.abort.abort(new Error('the delegation plugin is stopping'));
  }
}
