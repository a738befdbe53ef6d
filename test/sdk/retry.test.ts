/**
 * The SDK's waiting helpers: `sleep` ends early with the signal's reason; `bounded` gives up on a call that takes too
 * long or whose signal aborts, and passes its value or error through otherwise.
 */
import { describe, expect, it } from 'vitest';
import { bounded, sleep } from '../../sdk/index.js';

describe('sleep', () => {
  it('resolves after the time, or rejects with the reason as soon as the signal aborts', async () => {
    await expect(sleep(5)).resolves.toBeUndefined();
    const ac = new AbortController();
    const p = sleep(60_000, ac.signal);
    ac.abort(new Error('stopping'));
    await expect(p).rejects.toThrow('stopping');
  });
});

describe('bounded', () => {
  const never = () => new Promise<never>(() => undefined);

  it('passes the value and the error of a call that answers in time', async () => {
    const signal = new AbortController().signal;
    await expect(bounded(Promise.resolve(42), 1000, signal)).resolves.toBe(42);
    await expect(bounded(Promise.reject(new Error('refused')), 1000, signal)).rejects.toThrow('refused');
  });

  it('gives up on a call that takes longer, with a TimeoutError', async () => {
    const e = await bounded(never(), 20, new AbortController().signal).catch((x: unknown) => x as Error);
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('TimeoutError');
    expect(e.message).toBe('no answer in 0.02 s');
  });

  it("gives up with the signal's reason when it aborts, also when it was aborted before", async () => {
    const ac = new AbortController();
    const p = bounded(never(), 60_000, ac.signal);
    ac.abort(new Error('a new connection'));
    await expect(p).rejects.toThrow('a new connection');
    await expect(bounded(never(), 60_000, ac.signal)).rejects.toThrow('a new connection');
  });

  it('a call that fails after it was given up on is not an unhandled rejection', async () => {
    let fail!: (e: Error) => void;
    const late = new Promise<never>((_, reject) => (fail = reject));
    await expect(bounded(late, 10, new AbortController().signal)).rejects.toThrow('no answer');
    fail(new Error('late'));
    await new Promise((r) => setTimeout(r, 10));
  });
});
