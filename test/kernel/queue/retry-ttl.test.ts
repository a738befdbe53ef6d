/**
 * An action that fails when its next retry could only start after its TTL has ended goes to failed at once,
 * with its error, instead of waiting pending until the TTL removes it without a trace in the failed group.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ActionQueue } from '../../../kernel/queue/index.js';
import { captureLog, FakeClock, tempHome } from './helpers.js';

let home: string;
let cleanup: () => void;
let clock: FakeClock;
let q: ActionQueue | undefined;

beforeEach(() => {
  ({ home, cleanup } = tempHome());
  clock = new FakeClock();
});
afterEach(async () => {
  await q?.close();
  q = undefined;
  cleanup();
});

describe('the last retry', () => {
  it('moves to failed at once when a retry could only start once its TTL is over', async () => {
    q = await ActionQueue.open({ home, owner: true, clock, log: captureLog(), quietCompactMs: 0 });
    const a = await q.push({ task: 'flaky', ttl: 2500, maxRetries: 3 });
    await q.take();
    expect(await q.fail(a.id, 'boom 1')).toBe('retry'); // due at 1 s, inside the TTL
    clock.advance(1000);
    await q.take();
    // The next backoff is 2 s: due at 3 s, after the TTL (2.5 s). Nothing would run it: it fails now.
    expect(await q.fail(a.id, 'boom 2')).toBe('failed');
    expect(q.get(a.id)).toMatchObject({ status: 'failed', metadata: { retries: 1 } });
    expect(q.get(a.id)?.error).toMatch(/^boom 2 \(not retried: .*TTL/);
    expect(q.list().failed.map((x) => x.id)).toEqual([a.id]);
    expect(q.counts()).toMatchObject({ pending: 0, failed: 1 });
  });
});
