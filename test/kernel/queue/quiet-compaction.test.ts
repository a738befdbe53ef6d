/**
 * `actions.json` exists from the first change and is brought up to date once the queue has been quiet for about a
 * second (debounced compaction), without a snapshot write per push.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ActionQueue, appendPush } from '../../../kernel/queue/index.js';
import { waitFor } from '../../helpers.js';
import { captureLog, tempHome } from './helpers.js';

let home: string;
let cleanup: () => void;
beforeEach(() => {
  ({ home, cleanup } = tempHome());
});
afterEach(() => cleanup());

const snapshot = () =>
  JSON.parse(readFileSync(join(home, 'actions.json'), 'utf8')) as {
    actions: Array<{ id: string; status: string }>;
    completed: Array<{ id: string }>;
  };

describe('actions.json from the first change on', () => {
  it('the first `keel push` of a home writes actions.json with the action, and the next owner reads it once', async () => {
    const a = await appendPush(home, { task: 'first ever' });
    expect(snapshot().actions.map((x) => x.id)).toEqual([a.id]);
    const b = await appendPush(home, { task: 'second' });
    // Later pushes only append (constant cost): the snapshot is not rewritten by them.
    expect(snapshot().actions.map((x) => x.id)).toEqual([a.id]);
    const q = await ActionQueue.open({ home, owner: true, log: captureLog(), quietCompactMs: 0 });
    // Read once, not twice (the snapshot absorbed the first push's journal line).
    expect(q.list().pending.map((x) => x.id)).toEqual([a.id, b.id]);
    await q.close();
  });

  it('the owner rewrites actions.json about a second after the queue goes quiet, not on every change', async () => {
    const q = await ActionQueue.open({ home, owner: true, log: captureLog(), quietCompactMs: 300 });
    try {
      const a = await q.push({ task: 'one' });
      const b = await q.push({ task: 'two' });
      await waitFor(() => existsSync(join(home, 'actions.json')) && snapshot().actions.length === 2, 'actions.json with both pushes', 5000);
      expect(snapshot().actions.map((x) => x.id)).toEqual([a.id, b.id]);
      const taken = (await q.take())!;
      await q.complete(taken.id, 'done');
      await waitFor(() => snapshot().completed.some((x) => x.id === taken.id), 'actions.json with the completion', 5000);
      expect(snapshot().actions.map((x) => x.id)).toEqual([b.id]);
      // Quiet: nothing changes, nothing is rewritten.
      const m = statSync(join(home, 'actions.json')).mtimeMs;
      await new Promise((r) => setTimeout(r, 700));
      expect(statSync(join(home, 'actions.json')).mtimeMs).toBe(m);
    } finally {
      await q.close();
    }
  });

  it('a push picked up from another process (keel push) also reaches actions.json while the owner runs', async () => {
    const q = await ActionQueue.open({ home, owner: true, log: captureLog(), quietCompactMs: 300, fileStore: { pollMs: 50 } });
    try {
      const a = await appendPush(home, { task: 'from the CLI' });
      await waitFor(
        () => existsSync(join(home, 'actions.json')) && snapshot().actions.some((x) => x.id === a.id),
        'the CLI push in actions.json',
        5000,
      );
    } finally {
      await q.close();
    }
  });

  it('keeps rewriting off while changes keep coming faster than the quiet time', async () => {
    // 100 ms between changes against a 2 s quiet time: a late timer or a slow fsync on a loaded machine cannot
    // open a quiet gap by accident.
    const q = await ActionQueue.open({ home, owner: true, log: captureLog(), quietCompactMs: 2000 });
    try {
      await q.push({ task: 'seed' });
      await waitFor(() => existsSync(join(home, 'actions.json')), 'the first compaction', 15_000);
      const m = statSync(join(home, 'actions.json')).mtimeMs;
      for (let i = 0; i < 8; i++) {
        await q.push({ task: `busy ${i}` });
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(statSync(join(home, 'actions.json')).mtimeMs).toBe(m);
      await waitFor(() => snapshot().actions.length === 9, 'the quiet-time compaction after the burst', 15_000);
    } finally {
      await q.close();
    }
  });
});
