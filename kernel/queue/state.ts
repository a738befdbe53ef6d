/**
 * The queue's state machine (SPEC "Action lifecycle") as a pure function of ops. The same `apply` serves
 * replay at open, ops picked up from other processes, and this process's own changes, which is what keeps the
 * in-memory state and the journal telling the same story.
 *
 * Replay rules: a push of a known id is ignored; an op on an unknown id is ignored; every op carries absolute
 * values. So replaying ops twice cannot create or resurrect work, but it could still move an action within its
 * FIFO; the snapshot's record of how far it absorbed the journal is what prevents a second replay outright.
 * `remove` wins over anything else on the same id in either order, so a remove from another process racing the
 * runner ends the same way in memory and on replay.
 *
 * Runners of a shared store stamp their ops with `by` (ops.ts): the first `start` of an action wins, and a settle
 * or requeue from a runner that no longer holds the action is ignored (the fence).
 *
 * A `stop` (the operator cancelled an executing action, from any process) is remembered with the action until it
 * settles: its runner aborts it, and whatever comes next for it (the runner's retry, a requeue after its runner
 * died) fails it for good with the stop's reason and time. A `stop` reaching an action that is pending again (it
 * was requeued in between) fails it at once. A completion that beat the stop stands.
 */
import type { Action } from '../../sdk/types.js';
import type { QueueOp } from './ops.js';
import { LanedPending } from './lanes.js';
import type { QueueSnapshot } from './store.js';

export interface StateLimits {
  completedLimit: number;
  failedLimit: number;
}

export class QueueState {
  /** Pending and executing actions by id. */
  readonly active = new Map<string, Action>();
  pending = new LanedPending();
  /** Oldest first; bounded to the newest `completedLimit`. */
  readonly completed = new Map<string, Action>();
  readonly failed = new Map<string, Action>();
  executing = 0;
  /** Which runner holds each executing action, where runners say so (shared stores). */
  readonly executors = new Map<string, string>();
  /** Executing actions the operator stopped (by id): the reason and when, until they settle. */
  readonly stops = new Map<string, { reason: string; at: number }>();

  constructor(private readonly limits: StateLimits) {}

  reset(s: QueueSnapshot, now: number): void {
    this.active.clear();
    this.completed.clear();
    this.failed.clear();
    this.pending = new LanedPending();
    this.executing = 0;
    this.executors.clear();
    this.stops.clear();
    for (const [id, by] of Object.entries(s.executors ?? {})) this.executors.set(id, by);
    for (const [id, stop] of Object.entries(s.stops ?? {})) this.stops.set(id, { reason: stop.reason, at: stop.at });
    for (const a of s.actions) {
      if (this.active.has(a.id)) continue;
      this.active.set(a.id, a);
      if (a.status === 'executing') this.executing++;
      else {
        a.status = 'pending';
        this.pending.add(a, now);
      }
    }
    for (const a of s.completed) this.settle(this.completed, { ...a, status: 'completed' }, this.limits.completedLimit);
    for (const a of s.failed) this.settle(this.failed, { ...a, status: 'failed' }, this.limits.failedLimit);
  }

  get(id: string): Action | undefined {
    return this.active.get(id) ?? this.completed.get(id) ?? this.failed.get(id);
  }

  /** Whether a settle or requeue stamped `by` comes from the runner holding the action (always true unstamped). */
  private holds(id: string, by: string | undefined): boolean {
    return by === undefined || this.executors.get(id) === by;
  }

  /** The runner holding an executing action, when runners say so. */
  executorOf(id: string): string | undefined {
    return this.executors.get(id);
  }

  /** Applies one op; returns whether anything changed. */
  apply(op: QueueOp, now: number): boolean {
    if (op.op !== 'push' && op.op !== 'start' && op.op !== 'remove' && op.op !== 'amend' && op.op !== 'stop' && !this.holds(op.id, op.by))
      return false;
    switch (op.op) {
      case 'push': {
        const a = op.action;
        if (this.get(a.id)) return false;
        a.status = 'pending';
        this.active.set(a.id, a);
        this.pending.add(a, now);
        return true;
      }
      case 'start': {
        const a = this.active.get(op.id);
        if (!a || a.status !== 'pending') return false;
        this.pending.delete(a.id);
        a.status = 'executing';
        this.executing++;
        if (op.by !== undefined) this.executors.set(a.id, op.by);
        return true;
      }
      case 'requeue': {
        const a = this.active.get(op.id);
        if (!a || a.status !== 'executing') return false;
        // Its runner died after the operator stopped it: it is not run again.
        const stop = this.stops.get(a.id);
        if (stop) return this.failStopped(a.id, stop.reason, stop.at);
        a.status = 'pending';
        this.executing--;
        this.executors.delete(a.id);
        // It was the next to run when its runner went away: it keeps that place.
        this.pending.add(a, now, true);
        return true;
      }
      case 'retry': {
        const a = this.active.get(op.id);
        if (!a) return false;
        const stop = this.stops.get(a.id);
        if (stop) return this.failStopped(a.id, op.error, stop.at);
        if (a.status === 'executing') this.executing--;
        this.executors.delete(a.id);
        a.status = 'pending';
        a.error = op.error;
        a.metadata.retries = op.retries;
        a.metadata.notBefore = op.notBefore;
        // Back of its priority's FIFO (once due), not its old place.
        this.pending.add(a, now);
        return true;
      }
      case 'complete': {
        const a = this.takeActive(op.id);
        if (!a) return false;
        a.status = 'completed';
        a.result = op.result;
        a.settledAt = new Date(op.at).toISOString();
        this.settle(this.completed, a, this.limits.completedLimit);
        return true;
      }
      case 'fail': {
        const a = this.takeActive(op.id);
        if (!a) return false;
        a.status = 'failed';
        a.error = op.error;
        a.settledAt = new Date(op.at).toISOString();
        this.settle(this.failed, a, this.limits.failedLimit);
        return true;
      }
      case 'remove':
        return this.takeActive(op.id) !== undefined || this.completed.delete(op.id) || this.failed.delete(op.id);
      case 'stop': {
        const a = this.active.get(op.id);
        if (!a) return false;
        if (a.status === 'pending') return this.failStopped(a.id, op.reason, op.at);
        if (this.stops.has(a.id)) return false;
        this.stops.set(a.id, { reason: op.reason, at: op.at });
        return true;
      }
      case 'amend': {
        // Only while it waits: one already started runs what it was given. The pending index holds this same
        // object, so its place in line is kept; what decides the place (priority, notBefore) is not in the op.
        const a = this.active.get(op.id);
        if (!a || a.status !== 'pending') return false;
        const { retries, maxRetries, ttl, notBefore } = a.metadata;
        a.task = op.task;
        a.metadata = { ...op.metadata, retries, maxRetries, ttl };
        if (notBefore === undefined) delete a.metadata.notBefore;
        else a.metadata.notBefore = notBefore;
        return true;
      }
    }
  }

  /** Whether the operator stopped this executing action (it is being aborted). */
  stopOf(id: string): { reason: string; at: number } | undefined {
    return this.stops.get(id);
  }

  private failStopped(id: string, error: string, at: number): boolean {
    const a = this.takeActive(id);
    if (!a) return false;
    a.status = 'failed';
    a.error = error;
    a.settledAt = new Date(at).toISOString();
    this.settle(this.failed, a, this.limits.failedLimit);
    return true;
  }

  private takeActive(id: string): Action | undefined {
    const a = this.active.get(id);
    if (!a) return undefined;
    this.active.delete(id);
    this.executors.delete(id);
    this.stops.delete(id);
    if (a.status === 'executing') this.executing--;
    else this.pending.delete(id);
    return a;
  }

  private settle(group: Map<string, Action>, a: Action, limit: number): void {
    group.delete(a.id);
    group.set(a.id, a);
    // Map iteration is insertion order, so the first key is the oldest.
    while (group.size > limit) group.delete(group.keys().next().value!);
  }

  executingActions(): Action[] {
    const out: Action[] = [];
    if (this.executing === 0) return out;
    for (const a of this.active.values()) if (a.status === 'executing') out.push(a);
    return out;
  }

  snapshot(now: number): QueueSnapshot {
    return {
      actions: [...this.executingActions(), ...this.pending.ordered(now)],
      completed: [...this.completed.values()],
      failed: [...this.failed.values()],
      ...(this.executors.size ? { executors: Object.fromEntries(this.executors) } : {}),
      ...(this.stops.size ? { stops: Object.fromEntries(this.stops) } : {}),
    };
  }
}
