import { afterEach, describe, expect, it, vi } from 'vitest';
import { TtlCache } from '../../sdk/channel-kit/index.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('TtlCache', () => {
  it('keeps an answer (also "nothing there") for its time, then forgets it', () => {
    vi.useFakeTimers();
    const c = new TtlCache<string, string | undefined>(1000, 10);
    c.set('a', 'Ann');
    c.set('gone', undefined);
    expect(c.get('a')).toEqual({ value: 'Ann' });
    expect(c.get('gone')).toEqual({ value: undefined });
    expect(c.get('never')).toBeUndefined();
    vi.advanceTimersByTime(999);
    expect(c.get('a')).toEqual({ value: 'Ann' });
    vi.advanceTimersByTime(1);
    expect(c.get('a')).toBeUndefined();
    expect(c.size).toBe(1);
  });

  it('keeps the newest entries only; setting a key again makes it the newest', () => {
    const c = new TtlCache<number, number>(60_000, 3);
    for (const k of [1, 2, 3]) c.set(k, k);
    c.set(1, 10);
    c.set(4, 4);
    expect([1, 2, 3, 4].map((k) => c.get(k)?.value)).toEqual([10, undefined, 3, 4]);
    expect(c.size).toBe(3);
  });
});
