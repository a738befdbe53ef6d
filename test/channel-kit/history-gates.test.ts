/**
 * The kit's HistoryGates: a held chat's live messages wait until every catch-up holding it lets it go; a chat a
 * live message waits for is read next; stopping opens everything.
 */
import { describe, expect, it } from 'vitest';
import { HistoryGates } from '../../sdk/channel-kit/index.js';

const settled = async (p: Promise<void> | undefined) => {
  let done = false;
  void p?.then(() => {
    done = true;
  });
  await new Promise((r) => setImmediate(r));
  return done;
};

describe('HistoryGates', () => {
  it('a live message of a held chat waits until its history is let go; other chats pass at once', async () => {
    const gates = new HistoryGates();
    const held = new Set<string>();
    gates.hold('A', held);
    expect(gates.gate('B')).toBeUndefined();
    const wait = gates.gate('A');
    expect(wait).toBeInstanceOf(Promise);
    expect(await settled(wait)).toBe(false);
    gates.unhold('A', held);
    expect(await settled(wait)).toBe(true);
    expect(gates.gate('A')).toBeUndefined();
  });

  it('a chat held by two catch-ups opens when the last one lets it go; holding twice in one is one hold', async () => {
    const gates = new HistoryGates();
    const first = new Set<string>();
    const second = new Set<string>();
    gates.hold('A', first);
    gates.hold('A', first);
    gates.hold('A', second);
    const wait = gates.gate('A');
    gates.releaseAll(first);
    expect(await settled(wait)).toBe(false);
    gates.unhold('A', first); // not held by it any more: changes nothing
    expect(await settled(wait)).toBe(false);
    gates.releaseAll(second);
    expect(await settled(wait)).toBe(true);
  });

  it('next() takes a chat a live message waits for before the others, else the first', () => {
    const gates = new HistoryGates();
    const held = new Set<string>();
    for (const c of ['A', 'B', 'C']) gates.hold(c, held);
    const rest = ['A', 'B', 'C'];
    void gates.gate('C');
    expect(gates.isWanted('C')).toBe(true);
    expect(gates.next(rest)).toBe('C');
    expect(gates.isWanted('C')).toBe(false);
    expect(gates.next(rest)).toBe('A');
    expect(rest).toEqual(['B']);
  });

  it('openAll lets every waiting live message go', async () => {
    const gates = new HistoryGates();
    const held = new Set<string>();
    gates.hold('A', held);
    gates.hold('B', held);
    const waits = [gates.gate('A'), gates.gate('B')];
    gates.openAll();
    expect(await Promise.all(waits.map(settled))).toEqual([true, true]);
    expect(gates.gate('A')).toBeUndefined();
  });

  it('while the chats to read are being listed, a chat that may be among them waits for the list, then for its own gate if the list held it; others go on', async () => {
    const gates = new HistoryGates();
    const held = new Set<string>();
    gates.listing();
    const unknown = new Set(['NEW', 'OTHER']);
    const may = (chat: string) => () => unknown.has(chat);
    expect(gates.gate('KNOWN', may('KNOWN'))).toBeUndefined();
    expect(gates.gate('NEW')).toBeUndefined(); // no say: not held by a list
    const waitNew = gates.gate('NEW', may('NEW'))!;
    const waitOther = gates.gate('OTHER', may('OTHER'))!;
    expect(await settled(waitNew)).toBe(false);
    // The list found NEW: it is held before the list is said to be in.
    gates.hold('NEW', held);
    gates.listed();
    expect(await settled(waitOther)).toBe(true);
    expect(await settled(waitNew)).toBe(false);
    expect(gates.isWanted('NEW')).toBe(true);
    gates.unhold('NEW', held);
    expect(await settled(waitNew)).toBe(true);
    expect(gates.gate('NEW', may('NEW'))).toBeUndefined();
  });

  it('a new listing ends the previous one, and openAll ends a listing', async () => {
    const gates = new HistoryGates();
    gates.listing();
    const first = gates.gate('X', () => true)!;
    gates.listing();
    expect(await settled(first)).toBe(true);
    const second = gates.gate('X', () => true)!;
    expect(await settled(second)).toBe(false);
    gates.openAll();
    expect(await settled(second)).toBe(true);
  });
});
