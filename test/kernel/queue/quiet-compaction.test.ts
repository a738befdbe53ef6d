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
  it('every `keel push` with no runner alive is in actions.json at once, and the next owner reads each once', async () => {
    const a = await appendPush(home, { task: 'first ever' });
    expect(snapshot().actions.map((x) => x.id)).toEqual([a.id]);
    const b = await appendPush(home, { task: 'second' });
    const c = await appendPush(home, { task: 'third', priority: 9 });
    // No runner folds the journal in: each push adds itself to the file (issue 36: three pushes, one in the file).
    expect(snapshot().actions.map((x) => x.id)).toEqual([a.id, b.id, c.id]);
    const q = await ActionQueue.open({ home, owner: true, log: captureLog(), quietCompactMs: 0 });
    // Read once, not twice (the snapshot records how far it absorbed the journal), in priority order.
    expect(q.list().pending.map((x) => x.id)).toEqual([c.id, a.id, b.id]);
    await q.close();
  });

  it('while a runner owns the queue, a push only appends (the runner folds it in)', async () => {
    const q = await ActionQueue.open({ home, owner: true, log: captureLog(), quietCompactMs: 60_000 });
    try {
      const seed = await q.push({ task: 'seed' });
      await q.compact();
      const before = readFileSync(join(home, 'actions.json'), 'utf8');
      const a = await appendPush(home, { task: 'from the CLI' });
      expect(readFileSync(join(home, 'actions.json'), 'utf8')).toBe(before);
      await waitFor(() => q.get(a.id) !== undefined, 'the runner to pick the push up', 5000);
      expect(snapshot().actions.map((x) => x.id)).toEqual([seed.id]);
    } finally {
      await q.close();
    }
  });

  it('a push after changes no one folded in (a runner killed before its quiet compaction) folds the whole queue', async () => {
    const q = await ActionQueue.open({ home, owner: true, log: captureLog(), quietCompactMs: 0 });
    const a = await q.push({ task: 'will fail', maxRetries: 0 });
    await q.compact();
    await q.take();
    await q.fail(a.id, 'boom');
    // What kill -9 leaves: the fail op in the journal, actions.json still showing the action pending.
    (q as unknown as { store: { compact(): Promise<boolean> } }).store.compact = async () => false;
    await q.close();
    expect(snapshot().actions.map((x) => x.id)).toEqual([a.id]);
    const b = await appendPush(home, { task: 'next' });
    const after = JSON.parse(readFileSync(join(home, 'actions.json'), 'utf8')) as {
      actions: Array<{ id: string }>;
      failed: Array<{ id: string; error: string }>;
    };
    expect(after.actions.map((x) => x.id)).toEqual([b.id]);
    expect(after.failed).toMatchObject([{ id: a.id, error: 'boom' }]);
    // Nothing read twice by the next owner.
    const again = await ActionQueue.open({ home, owner: true, log: captureLog(), quietCompactMs: 0 });
    expect(again.list().pending.map((x) => x.id)).toEqual([b.id]);
    expect(again.list().failed.map((x) => x.id)).toEqual([a.id]);
    await again.close();
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
