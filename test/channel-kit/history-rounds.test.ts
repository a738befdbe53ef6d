/**
 * The kit's HistoryRounds: a round after each new connection holds its chats from the start and cuts short the one
 * running; a sweep runs only when nothing else does and the connection is up; sweeps come every interval (none at
 * 0); stop() aborts the round and lets every waiting live message go.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HistoryRounds } from '../../sdk/channel-kit/index.js';

const tick = () => new Promise((r) => setImmediate(r));

describe('HistoryRounds', () => {
  afterEach(() => vi.useRealTimers());

  it('after a new connection its chats are held at once, and let go as the round reads them', async () => {
    const rounds = new HistoryRounds({ signal: new AbortController().signal, interval: () => 0, connected: () => true, onSweep() {} });
    let release!: () => void;
    const reading = new Promise<void>((r) => (release = r));
    rounds.afterConnect(['A', 'B'], async (held) => {
      await reading;
      rounds.gates.unhold('A', held);
    });
    const a = rounds.gates.gate('A');
    const b = rounds.gates.gate('B');
    expect(a).toBeInstanceOf(Promise);
    expect(b).toBeInstanceOf(Promise);
    expect(rounds.busy).toBe(true);
    release();
    await a;
    // B was not let go by the round itself: it is when the round ends.
    await b;
    await tick();
    expect(rounds.busy).toBe(false);
  });

  it('a new connection cuts short the round running and starts its own after it; a sweep waits for neither', async () => {
    const rounds = new HistoryRounds({ signal: new AbortController().signal, interval: () => 0, connected: () => true, onSweep() {} });
    const log: string[] = [];
    rounds.afterConnect(['A'], (_held, signal) => {
      log.push('first started');
      return new Promise<void>((resolve) =>
        signal.addEventListener('abort', () => {
          log.push(`first aborted: ${(signal.reason as Error).message}`);
          resolve();
        }),
      );
    });
    await tick();
    expect(rounds.sweep(async () => void log.push('sweep'))).toBe(false);
    rounds.afterConnect(['A'], async () => void log.push('second'));
    await vi.waitFor(() => expect(rounds.busy).toBe(false));
    expect(log).toEqual(['first started', 'first aborted: a new connection', 'second']);
    expect(rounds.sweep(async () => void log.push('sweep'))).toBe(true);
    await vi.waitFor(() => expect(log.at(-1)).toBe('sweep'));
  });

  it('no sweep while the connection is down; sweeps come every interval, none at 0', async () => {
    vi.useFakeTimers();
    let up = false;
    let every = 5;
    const sweeps: number[] = [];
    const rounds = new HistoryRounds({
      signal: new AbortController().signal,
      interval: () => every,
      connected: () => up,
      onSweep: () => sweeps.push(Date.now()),
    });
    expect(rounds.sweep(async () => undefined)).toBe(false);
    up = true;
    rounds.start();
    await vi.advanceTimersByTimeAsync(5_000);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(sweeps).toHaveLength(2);
    every = 0;
    await vi.advanceTimersByTimeAsync(5_000); // the wait already scheduled at 5 s ends with no sweep
    await vi.advanceTimersByTimeAsync(120_000);
    expect(sweeps).toHaveLength(2);
    await rounds.stop();
  });

  it('stop aborts the round and opens every gate', async () => {
    const rounds = new HistoryRounds({ signal: new AbortController().signal, interval: () => 0, connected: () => true, onSweep() {} });
    let reason: unknown;
    rounds.afterConnect(
      ['A'],
      (_held, signal) => new Promise<void>((resolve) => signal.addEventListener('abort', () => ((reason = signal.reason), resolve()))),
    );
    const wait = rounds.gates.gate('A');
    await tick();
    await rounds.stop();
    await wait;
    expect((reason as Error).message).toBe('stopping');
    rounds.afterConnect(['B'], async () => undefined);
    expect(rounds.gates.gate('B')).toBeUndefined();
  });
});
