/**
 * Run order of the pending actions: one FIFO per priority 1..10, plus a heap of actions held back until their
 * `metadata.notBefore` (retry backoff, or a producer's schedule). A held-back action joins the back of its
 * priority's FIFO once it is due. Every operation is O(1) or O(log n), so the cost of a push or a take does not
 * grow with the queue.
 *
 * Removal is lazy: `live` maps an id to its current entry, and FIFO/heap slots whose entry is no longer the
 * live one are skipped when reached (and swept out once they pile up).
 */
import type { Action } from '../../sdk/types.js';
import { MAX_PRIORITY, MIN_PRIORITY } from './action.js';
import { Fifo, MinHeap } from './collections.js';

interface Entry {
  action: Action;
  /** Order of arrival; breaks ties between equal notBefore. */
  seq: number;
  delayed: boolean;
}

const SWEEP_MIN_STALE = 1024;

export class PendingIndex {
  private readonly fifos: Fifo<Entry>[] = [];
  private readonly delayed = new MinHeap<Entry>((a, b) => this.isBefore(a, b));
  private readonly live = new Map<string, Entry>();
  private seq = 0;
  private ready = 0;
  private stale = 0;

  constructor() {
    for (let p = 0; p <= MAX_PRIORITY; p++) this.fifos.push(new Fifo<Entry>());
  }

  get size(): number {
    return this.live.size;
  }

  has(id: string): boolean {
    return this.live.has(id);
  }

  /**
   * Adds at the back of the action's priority (or at the front with `front`), or to the held-back heap while
   * its notBefore is ahead of `now`.
   */
  add(action: Action, now: number, front = false): void {
    // Held-back actions that came due before this one arrived go first.
    this.promote(now);
    this.delete(action.id);
    const nb = action.metadata.notBefore;
    const entry: Entry = { action, seq: this.seq++, delayed: typeof nb === 'number' && nb > now };
    this.live.set(action.id, entry);
    if (entry.delayed) this.delayed.push(entry);
    else {
      if (front) this.fifoOf(action).unshift(entry);
      else this.fifoOf(action).push(entry);
      this.ready++;
    }
  }

  delete(id: string): boolean {
    const e = this.live.get(id);
    if (!e) return false;
    this.live.delete(id);
    if (!e.delayed) this.ready--;
    this.stale++;
    if (this.stale > SWEEP_MIN_STALE && this.stale > this.live.size) this.sweepStale();
    return true;
  }

  /** Removes and returns the next action to run at `now`, if any is due. */
  shift(now: number): Action | undefined {
    this.promote(now);
    if (this.ready === 0) return undefined;
    for (let p = MAX_PRIORITY; p >= MIN_PRIORITY; p--) {
      const fifo = this.fifos[p]!;
      for (let e = fifo.shift(); e; e = fifo.shift()) {
        if (this.live.get(e.action.id) !== e) {
          this.stale--;
          continue;
        }
        this.live.delete(e.action.id);
        this.ready--;
        return e.action;
      }
    }
    return undefined;
  }

  /** Priority of the action `shift(now)` would return, without taking it; undefined when none is due. */
  peekPriority(now: number): number | undefined {
    this.promote(now);
    if (this.ready === 0) return undefined;
    for (let p = MAX_PRIORITY; p >= MIN_PRIORITY; p--) {
      const fifo = this.fifos[p]!;
      for (let e = fifo.peek(); e; e = fifo.peek()) {
        if (this.live.get(e.action.id) === e) return p;
        fifo.shift();
        this.stale--;
      }
    }
    return undefined;
  }

  /** Epoch ms at which an action can next be taken: `now` when one is due already. */
  nextDueAt(now: number): number | undefined {
    this.promote(now);
    if (this.ready > 0) return now;
    return this.delayed.peek()?.action.metadata.notBefore;
  }

  /** Pending actions in the order they would run: due ones by priority then arrival, then held-back by time. */
  ordered(now: number): Action[] {
    this.promote(now);
    const out: Action[] = [];
    for (let p = MAX_PRIORITY; p >= MIN_PRIORITY; p--) {
      for (const e of this.fifos[p]!) if (this.live.get(e.action.id) === e) out.push(e.action);
    }
    const held = this.delayed.toArray().filter((e) => this.live.get(e.action.id) === e);
    held.sort((a, b) => (this.isBefore(a, b) ? -1 : 1));
    for (const e of held) out.push(e.action);
    return out;
  }

  private isBefore(a: Entry, b: Entry): boolean {
    const x = a.action.metadata.notBefore!;
    const y = b.action.metadata.notBefore!;
    return x === y ? a.seq < b.seq : x < y;
  }

  private fifoOf(action: Action): Fifo<Entry> {
    const p = Math.min(MAX_PRIORITY, Math.max(MIN_PRIORITY, Math.round(action.priority) || MIN_PRIORITY));
    return this.fifos[p]!;
  }

  private promote(now: number): void {
    for (let top = this.delayed.peek(); top; top = this.delayed.peek()) {
      if (this.live.get(top.action.id) !== top) {
        this.delayed.pop();
        this.stale--;
        continue;
      }
      if (top.action.metadata.notBefore! > now) break;
      this.delayed.pop();
      top.delayed = false;
      this.fifoOf(top.action).push(top);
      this.ready++;
    }
  }

  private sweepStale(): void {
    const isLive = (e: Entry) => this.live.get(e.action.id) === e;
    for (const f of this.fifos) f.filter(isLive);
    this.delayed.filter(isLive);
    this.stale = 0;
  }
}
