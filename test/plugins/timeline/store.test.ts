/**
 * The timeline store's bounds and persistence: at most timelineMaxEvents per action (the origin kept, the rest
 * counted as dropped), at most timelineMaxActions actions (the oldest go with their events) and as many ignored
 * records; everything survives closing and reopening; a read-only store refuses nothing it should show.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { TimelineStore } from '../../../plugins/timeline/src/store.js';
import { rm, tmp } from '../../helpers.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rm(d);
});

function home(): string {
  const d = tmp('keel-timeline-store-');
  dirs.push(d);
  return d;
}

const action = (i: number, inbound = true) => ({
  id: `act_${1000 + i}_x`,
  task: `task ${i}`,
  source: 'chat',
  status: 'pending',
  createdAt: new Date(1_700_000_000_000 + i).toISOString(),
  ...(inbound ? { inbound: { channel: 'chat', messageId: `m-${i}`, userId: 'u1' } } : {}),
});

describe('TimelineStore', () => {
  it('keeps at most maxEvents per action, keeping where it came from and counting what it dropped', () => {
    const h = home();
    const store = TimelineStore.open(h, () => ({ maxEvents: 10, maxActions: 100 }));
    expect(store.ensure(action(1))).toBe(true);
    expect(store.ensure(action(1))).toBe(false);
    for (let i = 0; i < 50; i++) store.add(action(1).id, 'skill_call', { name: 'lookup', ok: true, durationMs: i, n: i });
    const t = store.get(action(1).id)!;
    expect(t.events).toHaveLength(10);
    expect(t.events.slice(0, 2).map((e) => e.type)).toEqual(['received', 'queued']);
    // The newest survive: n = 42..49.
    expect(t.events.slice(2).map((e) => e.data.n)).toEqual([42, 43, 44, 45, 46, 47, 48, 49]);
    expect(t.dropped).toBe(42);
    store.close();
  });

  it('keeps at most maxActions timelines (and ignored records), the newest, across a reopen', () => {
    const h = home();
    const store = TimelineStore.open(h, () => ({ maxEvents: 50, maxActions: 10 }));
    for (let i = 0; i < 25; i++) {
      store.ensure(action(i));
      store.add(action(i).id, 'started', { attempt: 1 });
      store.ignored({ at: new Date().toISOString(), channel: 'chat', messageId: `ign-${i}`, reason: 'duplicate' });
    }
    expect(store.counts()).toEqual({ actions: 10, events: 30, ignored: 10 });
    store.close();

    const again = TimelineStore.read(h)!;
    expect(again.get(action(14).id)).toBeUndefined();
    expect(again.get(action(15).id)!.events.map((e) => e.type)).toEqual(['received', 'queued', 'started']);
    expect(again.byMessageId('m-24').map((t) => t.action.id)).toEqual([action(24).id]);
    expect(again.ignoredFor('ign-14')).toEqual([]);
    expect(again.ignoredFor('ign-24')).toMatchObject([{ channel: 'chat', reason: 'duplicate' }]);
    again.close();
  });

  it('finds a `<chat>:<message>` id (chatA) by the message part alone, with no wildcard from the id', () => {
    const store = TimelineStore.open(home());
    const a = { ...action(1), inbound: { channel: 'chatA', messageId: '-100123:17', userId: '42' } };
    const b = { ...action(2), inbound: { channel: 'chatA', messageId: '-100123:a_b', userId: '42' } };
    const c = { ...action(3), inbound: { channel: 'chatA', messageId: '-100123:aZb', userId: '42' } };
    for (const x of [a, b, c]) store.ensure(x);
    store.ignored({ at: new Date().toISOString(), channel: 'chatA', messageId: '-100123:18', reason: 'auto-reply-off' });
    expect(store.byMessageId('17').map((t) => t.action.id)).toEqual([a.id]);
    expect(store.byMessageId('-100123:17').map((t) => t.action.id)).toEqual([a.id]);
    expect(store.byMessageId('7')).toEqual([]);
    expect(store.byMessageId('a_b').map((t) => t.action.id)).toEqual([b.id]);
    expect(store.ignoredFor('18')).toMatchObject([{ messageId: '-100123:18', reason: 'auto-reply-off' }]);
    store.close();
  });

  it('reads nothing from a home where nothing was recorded', () => {
    expect(TimelineStore.read(home())).toBeUndefined();
  });
});
