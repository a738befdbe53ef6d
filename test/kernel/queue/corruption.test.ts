import { appendFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ActionQueue, appendPush } from '../../../kernel/queue/index.js';
import { type CapturedLog, captureLog, FakeClock, tempHome } from './helpers.js';

let home: string;
let cleanup: () => void;
const opened: ActionQueue[] = [];

beforeEach(() => {
  ({ home, cleanup } = tempHome());
});

afterEach(async () => {
  for (const q of opened.splice(0)) await q.close();
  cleanup();
});

async function openOwner(log: CapturedLog = captureLog()): Promise<ActionQueue> {
  const q = await ActionQueue.open({ home, owner: true, log });
  opened.push(q);
  return q;
}

async function closeAll(): Promise<void> {
  for (const q of opened.splice(0)) await q.close();
}

const journal = () => join(home, 'actions.journal');
const keptAside = (name: string) => readdirSync(home).filter((f) => f.startsWith(`${name}.corrupt-`));
const pendingTasks = (q: ActionQueue) => q.list().pending.map((a) => a.task);

describe('queue files damaged by a crash or by hand', () => {
  it('ignores a truncated last journal line with a warning, and the next push is not glued to it', async () => {
    for (const t of ['a', 'b', 'c']) await appendPush(home, { task: t });
    appendFileSync(journal(), '{"op":"push","action":{"id":"act_1_torn","task":"never acknowl');
    const log = captureLog();
    const q = await openOwner(log);
    expect(pendingTasks(q)).toEqual(['a', 'b', 'c']);
    expect(q.problems).toEqual([]);
    expect(log.text('warn')).toMatch(/truncated last line/);
    await q.push({ task: 'd' });
    await closeAll();
    // Also through the no-load fast path, with a torn tail left by a crashed `keel push`.
    appendFileSync(journal(), '{"op":"push","act');
    await appendPush(home, { task: 'e' });
    const again = await openOwner();
    expect(pendingTasks(again)).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(again.problems).toEqual([]);
  });

  it('reports a corrupt line in the middle, keeps the file aside and applies every other op', async () => {
    await appendPush(home, { task: 'a' });
    appendFileSync(journal(), 'this is not json\n');
    await appendPush(home, { task: 'b' });
    const log = captureLog();
    const q = await openOwner(log);
    expect(pendingTasks(q)).toEqual(['a', 'b']);
    expect(q.problems).toHaveLength(1);
    expect(q.problems[0]).toMatch(/actions\.journal has corrupt lines.*line 3/);
    expect(log.text('error')).toMatch(/corrupt/);
    const kept = keptAside('actions.journal');
    expect(kept).toHaveLength(1);
    expect(readFileSync(join(home, kept[0]!), 'utf8')).toContain('this is not json');
    // Repaired: the live journal no longer carries the bad line, so the next open is clean.
    await closeAll();
    const again = await openOwner();
    expect(again.problems).toEqual([]);
    expect(pendingTasks(again)).toEqual(['a', 'b']);
  });

  it('rebuilds from actions.json.bak and the journals when actions.json is corrupt', async () => {
    const q = await openOwner();
    await q.push({ task: 'a' });
    const b = await q.push({ task: 'b' });
    await q.take();
    await closeAll(); // snapshot 1
    const q2 = await openOwner();
    await q2.push({ task: 'c' });
    await q2.complete((await q2.take())!.id, 'done');
    await closeAll(); // snapshot 2; snapshot 1 becomes actions.json.bak
    await appendPush(home, { task: 'd' }); // in the live journal
    const good = JSON.parse(readFileSync(join(home, 'actions.json'), 'utf8'));
    writeFileSync(join(home, 'actions.json'), '{"actions":[{"id":"act_1_x","task":"half-writt');

    const log = captureLog();
    const q3 = await openOwner(log);
    expect(q3.problems.join('\n')).toMatch(/actions\.json is corrupt/);
    expect(log.text('error')).toMatch(/actions\.json is corrupt/);
    expect(pendingTasks(q3)).toEqual(['b', 'c', 'd']);
    expect(q3.list().completed.map((x) => x.task)).toEqual(['a']);
    expect(q3.get(b.id)?.status).toBe('pending');
    // With no runner alive, the push of d reached actions.json too (issue 36).
    expect(good.actions.map((x: { task: string }) => x.task)).toEqual(['b', 'c', 'd']);
    const kept = keptAside('actions.json');
    expect(kept).toHaveLength(1);
    expect(readFileSync(join(home, kept[0]!), 'utf8')).toContain('half-writt');
    // The open rewrote a good actions.json: the next open is clean and identical.
    await closeAll();
    const q4 = await openOwner();
    expect(q4.problems).toEqual([]);
    expect(pendingTasks(q4)).toEqual(['b', 'c', 'd']);
  });

  it('says so when both snapshots are unreadable, and still recovers what the journals hold', async () => {
    const q = await openOwner();
    await q.push({ task: 'a' });
    await closeAll();
    await appendPush(home, { task: 'b' });
    // Edited in place, as an editor might: the backup must not share the damage.
    writeFileSync(join(home, 'actions.json'), '{"no actions here": true}');
    writeFileSync(join(home, 'actions.json.bak'), 'garbage');
    const q2 = await openOwner();
    const text = q2.problems.join('\n');
    expect(text).toMatch(/actions\.json is corrupt \(no "actions" array\)/);
    expect(text).toMatch(/actions\.json\.bak is corrupt/);
    // `a` lives in actions.journal.bak (the journal snapshot 1 absorbed), `b` in the live journal.
    expect(pendingTasks(q2)).toEqual(['a', 'b']);
    expect(keptAside('actions.json')).toHaveLength(1);
  });

  it('never applies an op twice after a crash between writing the snapshot and swapping the journal', async () => {
    // Replaying the absorbed journal again would take `a` out of its place and retry it once more, behind `c`.
    const clock = new FakeClock();
    const q = await ActionQueue.open({ home, owner: true, log: captureLog(), clock });
    opened.push(q);
    await q.push({ task: 'a' });
    await q.push({ task: 'b' });
    await q.fail((await q.take())!.id, 'first try failed');
    clock.advance(1000);
    await q.push({ task: 'c' });
    expect(pendingTasks(q)).toEqual(['b', 'a', 'c']);
    await closeAll();
    // Recreate the crash window: actions.json absorbed the journal that is still live (now journal.bak), and a
    // `keel push` then appended to that same journal.
    writeFileSync(journal(), readFileSync(join(home, 'actions.journal.bak')));
    const snap = JSON.parse(readFileSync(join(home, 'actions.json'), 'utf8'));
    expect(readFileSync(journal(), 'utf8').split('\n')[0]).toContain(snap.journal);
    await appendPush(home, { task: 'd' });
    const q2 = await ActionQueue.open({ home, owner: true, log: captureLog(), clock });
    opened.push(q2);
    expect(q2.problems).toEqual([]);
    expect(pendingTasks(q2)).toEqual(['b', 'a', 'c', 'd']);
  });
});
