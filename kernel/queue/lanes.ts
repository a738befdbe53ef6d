/**
 * Lanes: the pending actions split by `metadata.lane` (absent: `main`), one run order (PendingIndex) per lane.
 * The runner carries out at most one action per lane at a time, so work in one lane (a sub-agent's task) can run
 * while another lane's action (the parent that delegated it) waits for it. Across lanes that are free, the due
 * action of highest priority goes first (ties: the main lane, then the lane that has waited longest for a take).
 */
import type { Action } from '../../sdk/types.js';
import { PendingIndex } from './pending-index.js';

export const MAIN_LANE = 'main';

/** The lane an action runs in. */
export function laneOf(action: Pick<Action, 'metadata'>): string {
  const l = action.metadata?.lane;
  return typeof l === 'string' && l.length > 0 ? l : MAIN_LANE;
}

export class LanedPending {
  private readonly lanes = new Map<string, PendingIndex>([[MAIN_LANE, new PendingIndex()]]);
  private readonly where = new Map<string, string>();
  private readonly main = this.lanes.get(MAIN_LANE)!;

  get size(): number {
    return this.where.size;
  }

  has(id: string): boolean {
    return this.where.has(id);
  }

  add(action: Action, now: number, front = false): void {
    const lane = laneOf(action);
    const before = this.where.get(action.id);
    if (before !== undefined && before !== lane) this.delete(action.id);
    let idx = this.lanes.get(lane);
    if (!idx) this.lanes.set(lane, (idx = new PendingIndex()));
    idx.add(action, now, front);
    this.where.set(action.id, lane);
  }

  delete(id: string): boolean {
    const lane = this.where.get(id);
    if (lane === undefined) return false;
    this.where.delete(id);
    const idx = this.lanes.get(lane)!;
    const gone = idx.delete(id);
    if (lane !== MAIN_LANE && idx.size === 0) this.lanes.delete(lane);
    return gone;
  }

  /**
   * Removes and returns the next action to run at `now` among lanes that `busy` does not exclude. With only the
   * main lane in use this is the main lane's own order, at the cost of one map lookup.
   */
  shift(now: number, busy?: (lane: string) => boolean): Action | undefined {
    if (this.lanes.size === 1) return busy?.(MAIN_LANE) ? undefined : this.take(MAIN_LANE, this.main, now);
    let bestLane: string | undefined;
    let bestIdx: PendingIndex | undefined;
    let bestP = -Infinity;
    for (const [lane, idx] of this.lanes) {
      if (busy?.(lane)) continue;
      const p = idx.peekPriority(now);
      if (p !== undefined && p > bestP) {
        bestP = p;
        bestLane = lane;
        bestIdx = idx;
      }
    }
    if (!bestIdx) return undefined;
    // Round robin among lanes of equal priority: the lane served goes to the back of the map's order.
    if (bestLane !== MAIN_LANE) {
      this.lanes.delete(bestLane!);
      this.lanes.set(bestLane!, bestIdx);
    }
    return this.take(bestLane!, bestIdx, now);
  }

  private take(lane: string, idx: PendingIndex, now: number): Action | undefined {
    const a = idx.shift(now);
    if (!a) return undefined;
    this.where.delete(a.id);
    if (lane !== MAIN_LANE && idx.size === 0) this.lanes.delete(lane);
    return a;
  }

  /** When an action of a free lane can next be taken (`now` if one is due already). */
  nextDueAt(now: number, busy?: (lane: string) => boolean): number | undefined {
    let best: number | undefined;
    for (const [lane, idx] of this.lanes) {
      if (busy?.(lane)) continue;
      const t = idx.nextDueAt(now);
      if (t !== undefined && (best === undefined || t < best)) best = t;
      if (best === now) break;
    }
    return best;
  }

  /** Pending actions in run order: due ones by priority (main lane first among equals), then held-back by time. */
  ordered(now: number): Action[] {
    if (this.lanes.size === 1) return this.main.ordered(now);
    const due: Action[] = [];
    const held: Action[] = [];
    for (const idx of this.lanes.values()) {
      for (const a of idx.ordered(now)) {
        const nb = a.metadata.notBefore;
        (typeof nb === 'number' && nb > now ? held : due).push(a);
      }
    }
    due.sort((a, b) => b.priority - a.priority);
    held.sort((a, b) => a.metadata.notBefore! - b.metadata.notBefore!);
    return [...due, ...held];
  }
}
