/**
 * The runner: takes the next due action when the agent is ready, hands it to whichever plugin provides the
 * `agent` capability, and settles it (completed, retry with backoff, failed). It never runs an action twice at
 * once: one runner per KEEL_HOME (the queue owner), and one action at a time per lane (`metadata.lane`; absent:
 * `main`). Lanes run side by side, so a sub-agent's task in its own lane can run while the action that delegated
 * it waits in the main lane (kernel/queue/lanes.ts).
 */
import type { HookCatalogue } from '../../sdk/hooks.js';
import type { AgentCapability } from '../../sdk/core-capabilities.js';
import type { Action, Logger } from '../../sdk/types.js';
import { errorMessage } from '../errors.js';
import type { QueueEngine } from '../queue/index.js';
import { laneOf, MAIN_LANE, truncateForLog } from '../queue/index.js';

export interface RunnerOptions {
  queue: QueueEngine;
  hooks: Readonly<HookCatalogue>;
  agent: () => AgentCapability | undefined;
  log: Logger;
  /** Longest sleep between checks, so readiness changes and TTL sweeps are noticed. */
  maxIdleMs?: number;
  /** How often expired actions are swept. */
  sweepEveryMs?: number;
  clock?: { now(): number };
  /** Passes over actions this runner must not run (a shared queue: a chat's action runs where its chat is). */
  accept?: (action: Action) => boolean;
}

export interface RunnerStatus {
  state: 'idle' | 'busy' | 'waiting' | 'stopped';
  /** Why actions are not running (no agent, agent not ready). */
  reason?: string;
  /** The action running in the main lane (else in any lane). */
  current?: string;
  /** Every running action by lane. */
  lanes?: Record<string, string>;
}

interface InFlight {
  action: Action;
  abort: AbortController;
  done: Promise<void>;
}

export class Runner {
  private stopped = true;
  private wake: (() => void) | undefined;
  /** What runs now, by lane. */
  private readonly running = new Map<string, InFlight>();
  private readonly isBusy = (lane: string) => this.running.has(lane);
  private loopDone: Promise<void> = Promise.resolve();
  private reason: string | undefined;
  private lastSweep = 0;
  private unsubscribe: (() => void) | undefined;
  private unsubscribeStop: (() => void) | undefined;
  private lastLoggedReason: string | undefined;

  constructor(private readonly o: RunnerOptions) {}

  status(): RunnerStatus {
    if (this.stopped) return { state: 'stopped' };
    if (this.running.size) {
      const lanes: Record<string, string> = {};
      for (const [lane, r] of this.running) lanes[lane] = r.action.id;
      return { state: 'busy', current: lanes[MAIN_LANE] ?? Object.values(lanes)[0]!, lanes };
    }
    if (this.reason) return { state: 'waiting', reason: this.reason };
    return { state: 'idle' };
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.unsubscribe = this.o.queue.onChange(() => this.poke());
    // The operator stopped an action, in this process or another one: abort it if it runs here.
    this.unsubscribeStop = this.o.queue.onStop((id, reason) => this.abort(id, reason));
    this.loopDone = this.loop();
  }

  /** Re-check now (new action, agent became ready). */
  poke(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private now(): number {
    return this.o.clock?.now() ?? Date.now();
  }

  private async sleep(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  private async loop(): Promise<void> {
    const maxIdle = this.o.maxIdleMs ?? 1000;
    while (!this.stopped) {
      try {
        if (this.now() - this.lastSweep >= (this.o.sweepEveryMs ?? 30_000)) {
          this.lastSweep = this.now();
          const removed = await this.o.queue.sweep();
          for (const a of removed) {
            this.o.log.warn(`Removed ${a.id} (${a.status}): its TTL of ${a.metadata.ttl} ms passed.`);
            await this.o.hooks.actionSettled.promise(a, { status: 'removed', detail: 'TTL expired' });
          }
        }
        const agent = this.o.agent();
        const readiness = agent
          ? agent.ready()
          : { ready: false, reason: 'no plugin provides the "agent" capability, so actions wait in the queue' };
        if (!readiness.ready) {
          this.setReason(readiness.reason ?? 'the agent is not ready');
          await this.sleep(maxIdle);
          continue;
        }
        this.setReason(undefined);
        const action = await this.o.queue.take(this.isBusy, this.o.accept);
        if (!action) {
          const due = this.o.queue.nextDueAt(this.isBusy);
          let wait = due === undefined ? maxIdle : Math.max(0, Math.min(maxIdle, due - this.now()));
          // Due but not taken: everything due was passed over (another runner's chats); a queue change wakes the loop.
          if (wait === 0 && this.o.accept) wait = maxIdle;
          await this.sleep(wait);
          continue;
        }
        this.launch(agent!, action);
      } catch (e) {
        this.o.log.error(`Runner error: ${errorMessage(e)}`);
        await this.sleep(maxIdle);
      }
    }
  }

  private setReason(reason: string | undefined): void {
    this.reason = reason;
    if (reason && reason !== this.lastLoggedReason) {
      // Said once per reason: at a start with an empty queue nothing waits yet, so the line says what will.
      const pending = this.o.queue.counts().pending;
      this.o.log.warn(pending ? `${pending} action(s) are waiting: ${reason}.` : `Actions will wait in the queue: ${reason}.`);
    }
    this.lastLoggedReason = reason;
  }

  /** Runs an action in its lane without waiting for it; the loop goes on to other lanes. */
  private launch(agent: AgentCapability, action: Action): void {
    const lane = laneOf(action);
    const abort = new AbortController();
    const entry: InFlight = { action, abort, done: Promise.resolve() };
    this.running.set(lane, entry);
    // Stopped between its claim and here: the stop found nothing to abort then, so it is honoured now.
    const stopped = this.o.queue.stopReason(action.id);
    if (stopped !== undefined) abort.abort(new Error(stopped));
    entry.done = this.run(agent, action, abort)
      .catch((e) => this.o.log.error(`Runner error in lane ${lane}: ${errorMessage(e)}`))
      .finally(() => {
        if (this.running.get(lane) === entry) this.running.delete(lane);
        this.poke();
      });
  }

  /**
   * Aborts the action `id` if it runs here: its signal is aborted with `reason`, and it settles as a failure (for
   * good when the operator stopped it through the queue, `ActionQueue.stop`). False when it does not run here.
   */
  abort(id: string, reason: string): boolean {
    for (const r of this.running.values()) {
      if (r.action.id === id) {
        r.abort.abort(new Error(reason));
        return true;
      }
    }
    return false;
  }

  private async run(agent: AgentCapability, action: Action, abort: AbortController): Promise<void> {
    this.o.log.info(`Running ${action.id} (priority ${action.priority}): ${truncateForLog(action.task)}`);
    try {
      await this.o.hooks.actionStarted.promise(action);
      const { result } = await agent.execute(action, { signal: abort.signal });
      await this.o.queue.complete(action.id, result);
      this.o.log.info(`Completed ${action.id}.`);
      await this.o.hooks.actionSettled.promise(this.o.queue.get(action.id) ?? action, { status: 'completed', detail: result });
    } catch (e) {
      const reason =
        abort.signal.aborted && !this.stopped && abort.signal.reason instanceof Error ? abort.signal.reason.message : errorMessage(e);
      if (this.stopped && abort.signal.aborted) {
        // Interrupted by shutdown: the queue returns executing actions to pending on the next start.
        this.o.log.warn(`Interrupted ${action.id} by shutdown; it will run again on the next start.`);
        return;
      }
      const outcome = await this.o.queue.fail(action.id, reason);
      const settled = this.o.queue.get(action.id) ?? action;
      if (outcome === 'retry') {
        this.o.log.warn(
          `Action ${action.id} failed (${reason}); retry ${settled.metadata.retries} of ${settled.metadata.maxRetries} scheduled.`,
        );
      } else {
        this.o.log.error(`Action ${action.id} failed for good: ${reason}`);
      }
      await this.o.hooks.actionSettled.promise(settled, { status: outcome, detail: reason });
    }
  }

  /** Stop taking work; abort the action in flight and wait for the loop to end. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.unsubscribe?.();
    this.unsubscribeStop?.();
    for (const r of this.running.values()) r.abort.abort();
    this.poke();
    await this.loopDone;
    await Promise.all([...this.running.values()].map((r) => r.done));
  }
}
