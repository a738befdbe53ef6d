/**
 * `linkSignals` and `withLinkedSignal`: a per-call signal that follows several others, used instead of
 * `AbortSignal.any`, which in Node keeps an entry in a long-lived input for every call (nodejs/node#55351). After
 * `dispose` a long-lived signal keeps nothing from a call: no listener, and no entry in Node's set of dependants.
 */
import { getEventListeners } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { linkSignals, withLinkedSignal } from '../../sdk/retry.js';

/** Node's set of the signals `AbortSignal.any` made from `signal` (internal; absent when there never were any). */
function dependants(signal: AbortSignal): number {
  const key = Object.getOwnPropertySymbols(signal).find((s) => s.description === 'kDependantSignals');
  return key ? ((signal as unknown as Record<symbol, Set<unknown> | undefined>)[key]?.size ?? 0) : 0;
}

const listeners = (signal: AbortSignal) => getEventListeners(signal, 'abort').length;

afterEach(() => vi.restoreAllMocks());

describe('linkSignals', () => {
  it('aborts when either input aborts, with that reason', () => {
    for (const which of [0, 1]) {
      const inputs = [new AbortController(), new AbortController()];
      const link = linkSignals([inputs[0]!.signal, inputs[1]!.signal]);
      expect(link.signal.aborted).toBe(false);
      const reason = new Error(`input ${which} stopped`);
      inputs[which]!.abort(reason);
      expect(link.signal.aborted).toBe(true);
      expect(link.signal.reason).toBe(reason);
      // the first reason stays; the other input is no longer listened to
      inputs[1 - which]!.abort(new Error('later'));
      expect(link.signal.reason).toBe(reason);
      expect(listeners(inputs[0]!.signal) + listeners(inputs[1]!.signal)).toBe(0);
      link.dispose();
    }
  });

  it('is aborted at once, with its reason, when an input already is, and then listens to nothing', () => {
    const long = new AbortController();
    const done = new AbortController();
    const reason = new Error('already stopped');
    done.abort(reason);
    for (const order of [
      [long.signal, done.signal],
      [done.signal, long.signal],
    ]) {
      const link = linkSignals(order);
      expect(link.signal.aborted).toBe(true);
      expect(link.signal.reason).toBe(reason);
      expect(listeners(long.signal)).toBe(0);
      link.dispose();
    }
  });

  it('skips undefined inputs, and gives a lone signal back as it is', () => {
    const ac = new AbortController();
    const lone = linkSignals([undefined, ac.signal]);
    expect(lone.signal).toBe(ac.signal);
    lone.dispose();
    expect(ac.signal.aborted).toBe(false);
    const none = linkSignals([undefined]);
    expect(none.signal.aborted).toBe(false);
    none.dispose();
  });

  it('leaves a long-lived signal nothing from 10,000 disposed calls, and still follows it after them', () => {
    const any = vi.spyOn(AbortSignal, 'any');
    const long = new AbortController();
    for (let i = 0; i < 10_000; i++) {
      const perCall = new AbortController();
      const link = linkSignals([perCall.signal, long.signal]);
      // linked by a listener while the call runs...
      expect(listeners(long.signal)).toBe(1);
      // ...which a call ended by its own signal removes too
      if (i % 2) perCall.abort();
      link.dispose();
      expect(listeners(long.signal)).toBe(0);
    }
    expect(listeners(long.signal)).toBe(0);
    expect(dependants(long.signal)).toBe(0);
    expect(any).not.toHaveBeenCalled();

    const live = linkSignals([new AbortController().signal, long.signal]);
    long.abort(new Error('plugin stopping'));
    expect(live.signal.aborted).toBe(true);
    expect((live.signal.reason as Error).message).toBe('plugin stopping');
    live.dispose();
  });

  it('the dependant check used above does see what AbortSignal.any leaves', () => {
    const long = new AbortController();
    const kept: AbortSignal[] = [];
    for (let i = 0; i < 10; i++) kept.push(AbortSignal.any([new AbortController().signal, long.signal]));
    expect(dependants(long.signal)).toBe(10);
  });
});

describe('withLinkedSignal', () => {
  it('passes the linked signal, and unlinks when the call resolves or rejects', async () => {
    const long = new AbortController();
    const call = new AbortController();
    const seen = await withLinkedSignal([call.signal, long.signal], async (signal) => {
      expect(listeners(long.signal)).toBe(1);
      call.abort(new Error('call cancelled'));
      return signal.reason as Error;
    });
    expect(seen.message).toBe('call cancelled');
    expect(listeners(long.signal)).toBe(0);

    await expect(
      withLinkedSignal([new AbortController().signal, long.signal], async () => {
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(listeners(long.signal)).toBe(0);
  });
});
