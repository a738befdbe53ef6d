/**
 * The kit's HistoryCatchUp with a small in-memory platform (cursors are epoch milliseconds as strings, two messages
 * a page): a read goes from the cursor and moves it; live messages of a chat being read wait for it; a sweep finding
 * a message the connection should have delivered rebuilds it, once; a failed read keeps the cursor and is warned
 * about once; a rate limit is waited out once per round.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type CatchUpAdapter, ChannelStore, HistoryCatchUp, historyCursorKey, UNDELIVERED_AFTER_MS } from '../../sdk/channel-kit/index.js';
import { rm, tmp, waitFor } from '../helpers.js';

interface Msg {
  id: string;
  text: string;
}

const cleanup: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0)) await f();
});

/** A rate limit as the fake platform throws it. */
class RateLimited extends Error {
  constructor(readonly retryAfter: number) {
    super('rate limited');
  }
}

function setUp() {
  const home = tmp('keel-catch-up-');
  const store = ChannelStore.open(home, 'fake');
  const abort = new AbortController();
  const logs: Array<{ level: string; message: string }> = [];
  const log = Object.fromEntries(
    ['debug', 'info', 'warn', 'error'].map((level) => [level, (message: string) => logs.push({ level, message })]),
  ) as unknown as import('../../sdk/index.js').Logger;
  /** Each chat's history, any order. */
  const history = new Map<string, Msg[]>();
  /** Errors the next page calls of a chat throw, in order. */
  const failures = new Map<string, unknown[]>();
  /** Page calls of a chat wait for this while it is set. */
  const blocked = new Map<string, Promise<void>>();
  /** What happened, in order: 'history <chat> <id>' per message recorded, and what the test adds. */
  const events: string[] = [];
  const recorded = new Set<string>();
  const rebuilt: string[] = [];
  const adapter: CatchUpAdapter<Msg, Msg> = {
    name: 'fake',
    word: 'chat',
    isCursor: (v) => /^\d+$/.test(v),
    newer: (a, b) => Number(a) > Number(b),
    cursorMs: Number,
    cursorAt: (ms) => String(Math.floor(ms)),
    idOf: (m) => m.id,
    eventMs: (m) => Number(m.id),
    describe: (e) => (e instanceof Error ? e.message : String(e)),
    retryAfter: (e) => (e instanceof RateLimited ? e.retryAfter : undefined),
    async page(chat, q, ctx) {
      return ctx.call(async () => {
        await blocked.get(chat);
        const fail = failures.get(chat)?.shift();
        if (fail) throw fail;
        const upTo = q.token ?? q.below;
        const all = (history.get(chat) ?? [])
          .filter((m) => Number(m.id) > Number(q.after) && (upTo === undefined || Number(m.id) < Number(upTo)))
          .sort((x, y) => Number(y.id) - Number(x.id));
        const messages = all.slice(0, 2);
        return all.length > 2 ? { messages, next: messages.at(-1)!.id } : { messages };
      });
    },
    async record(chat, messages) {
      const fresh = messages.filter((m) => !recorded.has(m.id));
      for (const m of fresh) {
        recorded.add(m.id);
        events.push(`history ${chat} ${m.id}`);
      }
      if (messages.length) store.setValue(historyCursorKey(chat), messages.at(-1)!.id);
      return { fresh };
    },
    lines: {
      failed: (chat, code) => `fake: could not read ${chat} (${code})`,
      tooMany: (chat) => `fake: too many in ${chat}`,
      undelivered: (n, chats) => `fake: ${n} undelivered in ${chats.join(', ')}`,
      rebuildReason: (n) => `${n} undelivered`,
      rateWait: (s) => `fake: waiting ${s} s`,
      rateLimited: (chat) => `fake: rate-limited at ${chat}`,
    },
  };
  const catchUp = new HistoryCatchUp<Msg, Msg>({
    store,
    log,
    signal: abort.signal,
    interval: () => 0,
    connected: () => true,
    rebuild: (reason) => rebuilt.push(reason),
    adapter,
    maxPerChat: 100,
    sweepBehind: true,
  });
  cleanup.push(async () => {
    abort.abort();
    await catchUp.stop();
    store.close();
    rm(home);
  });
  /** Waits for the round running (or started) to end. */
  const ended = async (before: string | undefined) => {
    await waitFor(() => catchUp.lastCatchUpAt !== before, 'the end of the round');
    await new Promise((r) => setTimeout(r, 2)); // lastCatchUpAt has a millisecond resolution
  };
  const connect = async () => {
    const before = catchUp.lastCatchUpAt;
    catchUp.afterConnect();
    await ended(before);
  };
  const sweep = async () => {
    const before = catchUp.lastCatchUpAt;
    catchUp.sweep();
    await ended(before);
  };
  const lines = (level: string, re: RegExp) => logs.filter((l) => l.level === level && re.test(l.message));
  return { store, catchUp, history, failures, blocked, events, rebuilt, connect, sweep, lines };
}

/** An id (epoch ms) `s` seconds ago. */
const ago = (s: number) => String(Date.now() - s * 1000);

describe('HistoryCatchUp', () => {
  it('reads the history after the cursor over pages, records it oldest first, and moves the cursor', async () => {
    const t = setUp();
    const [old, a, b, c] = [ago(900), ago(600), ago(500), ago(400)];
    t.store.setValue(historyCursorKey('A'), old);
    t.history.set('A', [
      { id: old, text: 'before the cursor' },
      { id: c, text: 'c' },
      { id: a, text: 'a' },
      { id: b, text: 'b' },
    ]);
    await t.connect();
    expect(t.events).toEqual([`history A ${a}`, `history A ${b}`, `history A ${c}`]);
    expect(t.store.getValue(historyCursorKey('A'))).toBe(c);
    expect(t.catchUp.caughtUp).toBe(3);
    expect(t.catchUp.behind('A')).toBe(false);
  });

  it('live messages of a chat being read wait for its read and come after it; other chats do not wait', async () => {
    const t = setUp();
    const cursor = ago(900);
    const said = ago(600);
    t.store.setValue(historyCursorKey('A'), cursor);
    t.history.set('A', [{ id: said, text: 'said while away' }]);
    let open!: () => void;
    t.blocked.set('A', new Promise<void>((r) => (open = r)));
    const before = t.catchUp.lastCatchUpAt;
    t.catchUp.afterConnect();
    expect(t.catchUp.behind('A')).toBe(true);
    t.catchUp.live('A');
    const wait = t.catchUp.gate('A');
    expect(wait).toBeInstanceOf(Promise);
    const live = wait!.then(() => t.events.push('live A'));
    expect(t.catchUp.gate('B')).toBeUndefined();
    await new Promise((r) => setTimeout(r, 20));
    expect(t.events).toEqual([]);
    open();
    await live;
    expect(t.events).toEqual([`history A ${said}`, 'live A']);
    await waitFor(() => t.catchUp.lastCatchUpAt !== before, 'the end of the round');
    expect(t.catchUp.behind('A')).toBe(false);
  });

  it('a sweep that finds an old message in a chat followed live rebuilds the connection, with one warning, once', async () => {
    const t = setUp();
    t.store.setValue(historyCursorKey('A'), ago(900));
    await t.connect();
    t.catchUp.live('A');
    // Dropped by the connection: older than a minute, after the cursor.
    const dropped = String(Date.now() - UNDELIVERED_AFTER_MS - 60_000);
    t.history.set('A', [{ id: dropped, text: 'never delivered' }]);
    await t.sweep();
    expect(t.events).toEqual([`history A ${dropped}`]);
    expect(t.rebuilt).toEqual(['1 undelivered']);
    expect(t.lines('warn', /undelivered/).map((l) => l.message)).toEqual(['fake: 1 undelivered in A']);
    await t.sweep();
    expect(t.rebuilt).toHaveLength(1);
    expect(t.lines('warn', /undelivered/)).toHaveLength(1);
  });

  it('a failed read keeps the cursor and is warned about once; a read that works again says so', async () => {
    const t = setUp();
    const cursor = ago(900);
    const said = ago(600);
    t.store.setValue(historyCursorKey('A'), cursor);
    t.history.set('A', [{ id: said, text: 'x' }]);
    t.failures.set('A', [new Error('no access'), new Error('no access')]);
    await t.connect();
    expect(t.store.getValue(historyCursorKey('A'))).toBe(cursor);
    expect(t.catchUp.behind('A')).toBe(true);
    await t.connect();
    expect(t.store.getValue(historyCursorKey('A'))).toBe(cursor);
    expect(t.lines('warn', /could not read/).map((l) => l.message)).toEqual(['fake: could not read A (no access)']);
    expect(t.lines('debug', /still cannot be read/)).toHaveLength(1);
    await t.connect();
    expect(t.events).toEqual([`history A ${said}`]);
    expect(t.store.getValue(historyCursorKey('A'))).toBe(said);
    expect(t.lines('info', /can be read again/).map((l) => l.message)).toEqual(['fake: the history of chat A can be read again.']);
  });

  it('a rate limit is waited out once per round; a second one ends the round, warned once, the rest read by the next', async () => {
    const t = setUp();
    const [a, b] = [ago(600), ago(500)];
    t.store.setValue(historyCursorKey('A'), ago(800)); // A is the more recently active: read first
    t.store.setValue(historyCursorKey('B'), ago(900));
    t.history.set('A', [{ id: a, text: 'a' }]);
    t.history.set('B', [{ id: b, text: 'b' }]);
    // One limit: waited out, the round goes on.
    t.failures.set('A', [new RateLimited(0.01)]);
    await t.connect();
    expect(t.events).toEqual([`history A ${a}`, `history B ${b}`]);
    expect(t.lines('info', /waiting/)).toHaveLength(1);
    expect(t.lines('warn', /rate-limited/)).toHaveLength(0);
    // Two in one round: the second ends it, A is left for the next round (B is now the more recently active: first).
    const [a2, b2] = [ago(300), ago(200)];
    t.history.get('A')!.push({ id: a2, text: 'a2' });
    t.history.get('B')!.push({ id: b2, text: 'b2' });
    t.failures.set('B', [new RateLimited(0.01), new RateLimited(0.01)]);
    await t.connect();
    expect(t.lines('info', /waiting/)).toHaveLength(2);
    expect(t.lines('warn', /rate-limited/).map((l) => l.message)).toEqual(['fake: rate-limited at B']);
    expect(t.events).toHaveLength(2);
    await t.connect();
    expect(t.events.slice(2).sort()).toEqual([`history A ${a2}`, `history B ${b2}`].sort());
  });
});
