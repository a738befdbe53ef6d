/**
 * Lanes of the pending index: one run order per lane, busy lanes skipped, priority across free lanes.
 */
import { describe, expect, it } from 'vitest';
import { LanedPending, laneOf } from '../../../kernel/queue/lanes.js';
import type { Action } from '../../../sdk/index.js';

let n = 0;
function act(priority: number, lane?: string, notBefore?: number): Action {
  n++;
  return {
    id: `a${n}`,
    task: `t${n}`,
    priority,
    status: 'pending',
    createdAt: new Date(0).toISOString(),
    source: 'cli',
    metadata: { retries: 0, maxRetries: 0, ttl: 1e9, ...(lane ? { lane } : {}), ...(notBefore !== undefined ? { notBefore } : {}) },
  };
}

describe('LanedPending', () => {
  it('reads the lane from metadata.lane, main when absent or empty', () => {
    expect(laneOf(act(5))).toBe('main');
    expect(laneOf(act(5, ''))).toBe('main');
    expect(laneOf(act(5, 'delegate:1'))).toBe('delegate:1');
  });

  it('takes by priority across lanes and skips lanes that are busy', () => {
    const p = new LanedPending();
    const m1 = act(5);
    const m2 = act(9);
    const d1 = act(7, 'delegate:1');
    const d2 = act(8, 'delegate:1');
    for (const a of [m1, m2, d1, d2]) p.add(a, 0);
    expect(p.size).toBe(4);
    expect(p.shift(0)?.id).toBe(m2.id);
    // main busy: the best of the other lanes, even though main holds one waiting
    expect(p.shift(0, (l) => l === 'main')?.id).toBe(d2.id);
    expect(p.shift(0, (l) => l === 'main' || l === 'delegate:1')).toBeUndefined();
    expect(p.nextDueAt(0, (l) => l === 'main' || l === 'delegate:1')).toBeUndefined();
    expect(p.nextDueAt(0, (l) => l === 'main')).toBe(0);
    expect(p.shift(0)?.id).toBe(d1.id);
    expect(p.shift(0)?.id).toBe(m1.id);
    expect(p.size).toBe(0);
  });

  it('keeps FIFO within a lane and priority, removes by id, and lists every lane in run order', () => {
    const p = new LanedPending();
    const a = act(5, 'x');
    const b = act(5, 'x');
    const c = act(6);
    const later = act(9, 'y', 1000);
    for (const x of [a, b, c, later]) p.add(x, 0);
    expect(p.ordered(0).map((x) => x.id)).toEqual([c.id, a.id, b.id, later.id]);
    expect(p.delete(a.id)).toBe(true);
    expect(p.has(a.id)).toBe(false);
    expect(p.delete(a.id)).toBe(false);
    expect(p.nextDueAt(0, (l) => l !== 'y')).toBe(1000);
    expect(p.nextDueAt(0, (l) => l === 'main' || l === 'x')).toBe(1000);
    expect(p.shift(0, (l) => l === 'main')?.id).toBe(b.id);
    expect(p.shift(2000)?.id).toBe(later.id);
  });

  it('serves lanes of equal priority in turn', () => {
    const p = new LanedPending();
    const x1 = act(5, 'x');
    const x2 = act(5, 'x');
    const y1 = act(5, 'y');
    for (const a of [x1, x2, y1]) p.add(a, 0);
    const busyMain = (l: string) => l === 'main';
    expect(p.shift(0, busyMain)?.id).toBe(x1.id);
    expect(p.shift(0, busyMain)?.id).toBe(y1.id);
    expect(p.shift(0, busyMain)?.id).toBe(x2.id);
  });
});
