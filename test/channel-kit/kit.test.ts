/**
 * The channel kit's durable parts and timing machinery, without a platform: ingress, ledger, outbox + limiter,
 * supervisor, progress feedback (the owner lock against a real process: owner-lock.e2e.test.ts).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  ChannelStore,
  ConnectionSupervisor,
  DeliveryLedger,
  failureNotice,
  Ingress,
  Outbox,
  ProgressFeedback,
  RateLimiter,
  TokenBucket,
  platformNonce,
  WriteBehind,
} from '../../sdk/channel-kit/index.js';
import { prefixEnd } from '../../sdk/channel-kit/store.js';
import { rm, tmp, waitFor } from '../helpers.js';

const log = { debug() {}, info() {}, warn() {}, error() {} };
const homes: string[] = [];
const stores: ChannelStore[] = [];
afterEach(() => {
  for (const s of stores.splice(0)) s.close();
  for (const h of homes.splice(0)) rm(h);
});
function open(home?: string): { home: string; store: ChannelStore } {
  const h = home ?? tmp('keel-kit-');
  if (!home) homes.push(h);
  const store = ChannelStore.open(h, 'test');
  stores.push(store);
  return { home: h, store };
}

describe('channel store', () => {
  it('values(prefix) returns exactly the keys that start with the prefix, in order, reading only their range', () => {
    const { store } = open();
    const keys = [
      'a',
      'a:',
      'a:1',
      'a:2',
      'a:\u{10ffff}',
      'a;',
      'a;0',
      'b:1',
      'é:1',
      'é:2',
      'ê',
      '\u{1f600}:x',
      '\u{1f601}',
      'z\u{10ffff}',
      'z\u{10ffff}a',
    ];
    keys.forEach((k, i) => store.setValue(k, String(i)));
    const expected = (prefix: string) =>
      keys
        .filter((k) => k.startsWith(prefix))
        .sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)))
        .map((k) => ({ key: k, value: String(keys.indexOf(k)) }));
    for (const prefix of ['a:', 'a', 'a;', 'é:', '\u{1f600}', 'z\u{10ffff}', 'z', 'nothing:', ''])
      expect(store.values(prefix), prefix).toEqual(expected(prefix));
    // The lookup is a search of the primary key, not a scan of every stored value: the plan of what it runs.
    const prepare = vi.spyOn(store.db, 'prepare');
    store.values('a:');
    const sql = prepare.mock.calls.at(-1)![0];
    prepare.mockRestore();
    const plan = store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all('a:', 'a;');
    expect(JSON.stringify(plan)).toMatch(/SEARCH kv USING INDEX sqlite_autoindex_kv_1 \(key>\? AND key<\?\)/);
    expect(prefixEnd('a:')).toBe('a;');
    expect(prefixEnd('a\u{10ffff}')).toBe('b');
    expect(prefixEnd('\u{10ffff}')).toBeUndefined();
  });
});

describe('ingress', () => {
  it('records a batch with its cursor in one step, drops duplicates, handles each chat in order', async () => {
    const { store } = open();
    const seen: string[] = [];
    const ingress = new Ingress<{ n: number }>(store, {
      log,
      handle: async (it) => {
        await new Promise((r) => setTimeout(r, it.payload.n % 2 ? 5 : 1));
        seen.push(`${it.chatId}:${it.payload.n}`);
      },
    });
    const batch = [1, 2, 3, 4, 5, 6].map((n) => ({ messageId: `m${n}`, chatId: n % 2 ? 'a' : 'b', payload: { n } }));
    expect(ingress.record(batch, { key: 'offset', value: '7' })).toHaveLength(6);
    expect(ingress.record(batch.slice(0, 3), { key: 'offset', value: '7' })).toHaveLength(0);
    expect(store.getValue('offset')).toBe('7');
    await ingress.idle();
    expect(seen.filter((s) => s.startsWith('a'))).toEqual(['a:1', 'a:3', 'a:5']);
    expect(seen.filter((s) => s.startsWith('b'))).toEqual(['b:2', 'b:4', 'b:6']);
    expect(ingress.open()).toBe(0);
  });

  it('pipelined: a chat\'s next message starts once the previous one is ordered, not once it is durable; each is done only when its own handler ends; a handler that never says "ordered" holds its chat', async () => {
    const { store } = open();
    const events: string[] = [];
    const durable = new Map<number, () => void>();
    const ingress = new Ingress<{ n: number; ordered: boolean }>(store, {
      log,
      handle: async (it, turn) => {
        events.push(`start ${it.payload.n}`);
        if (it.payload.ordered) turn.ordered();
        // The effect becomes durable later (the test decides when).
        await new Promise<void>((r) => durable.set(it.payload.n, r));
        events.push(`end ${it.payload.n}`);
      },
    });
    const item = (n: number, ordered = true) => ({ messageId: `p${n}`, chatId: 'a', payload: { n, ordered } });
    ingress.record([item(1), item(2), item(3, false), item(4)]);
    await waitFor(() => durable.has(3), 'message 3 started while 1 and 2 are not durable');
    expect(events).toEqual(['start 1', 'start 2', 'start 3']);
    // 3 never said "ordered": 4 waits for it to end.
    await new Promise((r) => setTimeout(r, 30));
    expect(durable.has(4)).toBe(false);
    expect(ingress.open()).toBe(4);
    durable.get(2)!();
    await waitFor(() => events.includes('end 2'), 'end 2');
    await new Promise((r) => setImmediate(r));
    // Done follows each message's own end, whatever the order: 2 is done, 1 is not.
    expect(ingress.outcome('p2')).toBe('handled');
    expect(ingress.outcome('p1')).toBeUndefined();
    durable.get(3)!();
    await waitFor(() => durable.has(4), 'message 4 started once 3 ended');
    durable.get(1)!();
    durable.get(4)!();
    await ingress.idle();
    expect(ingress.open()).toBe(0);
    expect(events.filter((e) => e.startsWith('start'))).toEqual(['start 1', 'start 2', 'start 3', 'start 4']);
  });

  it('turn.previous: a handler that reads what came before (a command) waits until every earlier message of its chat finished', async () => {
    const { store } = open();
    const events: string[] = [];
    let durable!: () => void;
    const ingress = new Ingress<{ n: number }>(store, {
      log,
      handle: async (it, turn) => {
        if (it.payload.n === 1) {
          turn.ordered();
          await new Promise<void>((r) => {
            durable = r;
          });
          events.push('1 durable');
          return;
        }
        events.push('2 started');
        await turn.previous;
        events.push('2 read');
      },
    });
    ingress.record([1, 2].map((n) => ({ messageId: `q${n}`, chatId: 'a', payload: { n } })));
    await waitFor(() => events.includes('2 started'), 'the command started once 1 was ordered');
    await new Promise((r) => setTimeout(r, 20));
    expect(events).toEqual(['2 started']);
    durable();
    await ingress.idle();
    expect(events).toEqual(['2 started', '1 durable', '2 read']);
  });

  it('recordSoon: messages pushed in the same turn share one transaction and each resolves once durable; duplicates dropped', async () => {
    const { store } = open();
    const seen: number[] = [];
    const ingress = new Ingress<{ n: number }>(store, { log, handle: async (it) => void seen.push(it.payload.n) });
    const commits: string[] = [];
    const exec = store.db.exec.bind(store.db);
    store.db.exec = (sql: string) => {
      if (sql === 'COMMIT') commits.push(sql);
      return exec(sql);
    };
    const inStore = () => (store.db.prepare('SELECT COUNT(*) AS n FROM inbound').get() as { n: number }).n;
    const pending = [1, 2, 3, 2].map((n) => ingress.recordSoon({ messageId: `m${n}`, chatId: 'a', payload: { n } }));
    expect(inStore()).toBe(0); // not yet: the promise is the moment it is durable
    // Each says whether it was new: the second m2 is a duplicate.
    expect(await Promise.all(pending)).toEqual([true, true, true, false]);
    expect(inStore()).toBe(3);
    expect(commits).toHaveLength(1);
    await ingress.idle();
    expect(seen).toEqual([1, 2, 3]);
    await ingress.close();
    await expect(ingress.recordSoon({ messageId: 'm9', chatId: 'a', payload: { n: 9 } })).rejects.toThrow(/closed/);
  });

  it('recordSoon with cursors: each written in the batch transaction, in call order; a function of the stored value moves one only forward', async () => {
    const { store } = open();
    const ingress = new Ingress<{ n: number }>(store, { log, handle: async () => undefined });
    const commits: string[] = [];
    const exec = store.db.exec.bind(store.db);
    store.db.exec = (sql: string) => {
      if (sql === 'COMMIT') commits.push(sql);
      return exec(sql);
    };
    const forward = (n: number) => ({ key: 'last:a', value: (stored: string | undefined) => String(Math.max(Number(stored ?? 0), n)) });
    // Out of order within the burst: the cursor ends at the highest, not the last.
    const pending = [3, 5, 4].map((n) => ingress.recordSoon({ messageId: `m${n}`, chatId: 'a', payload: { n } }, forward(n)));
    const plain = ingress.recordSoon({ messageId: 'x1', chatId: 'b', payload: { n: 1 } }, { key: 'last:b', value: '1' });
    expect(store.getValue('last:a')).toBeUndefined(); // nothing before the commit
    await Promise.all([...pending, plain]);
    expect(commits).toHaveLength(1);
    expect(store.getValue('last:a')).toBe('5');
    expect(store.getValue('last:b')).toBe('1');
    // A duplicate still runs its cursor (and cannot move it back); record() takes a list of cursors too.
    ingress.record([{ messageId: 'm3', chatId: 'a', payload: { n: 3 } }], [forward(2), { key: 'last:c', value: 'c' }]);
    expect(store.getValue('last:a')).toBe('5');
    expect(store.getValue('last:c')).toBe('c');
    await ingress.close();
  });

  it('recordSoon: a batch is fsynced (FULL) unless every call in it asked for NORMAL', async () => {
    const { store } = open();
    const ingress = new Ingress<{ n: number }>(store, { log, handle: async () => undefined });
    const levels: string[] = [];
    const tx = store.tx.bind(store);
    store.tx = ((fn: () => unknown, level?: 'FULL' | 'NORMAL') => {
      levels.push(level ?? 'FULL');
      return tx(fn, level);
    }) as typeof store.tx;
    const normal = { durability: 'NORMAL' as const };
    await Promise.all([1, 2].map((n) => ingress.recordSoon({ messageId: `a${n}`, chatId: 'a', payload: { n } }, undefined, normal)));
    await Promise.all([
      ingress.recordSoon({ messageId: 'b1', chatId: 'a', payload: { n: 1 } }, undefined, normal),
      ingress.recordSoon({ messageId: 'b2', chatId: 'a', payload: { n: 2 } }),
    ]);
    await ingress.recordSoon({ messageId: 'c1', chatId: 'a', payload: { n: 1 } });
    expect(levels.slice(0, 1)).toEqual(['NORMAL']);
    expect(levels.filter((l, i) => i > 0 && l === 'FULL').length).toBeGreaterThanOrEqual(2);
    await ingress.close();
  });

  it('done marks: the messages handled in one turn are marked in one commit (or in the next record), read at once by outcome() and open(), kept by close', async () => {
    const { store, home } = open();
    let open1!: () => void;
    const gate = { promise: new Promise<void>((r) => (open1 = r)) };
    const ingress = new Ingress<{ n: number }>(store, { log, handle: async (it) => (await gate.promise, `ok${it.payload.n}`) });
    ingress.record([1, 2, 3, 4, 5].map((n) => ({ messageId: `m${n}`, chatId: `c${n}`, payload: { n } })));
    const commits: string[] = [];
    const exec = store.db.exec.bind(store.db);
    store.db.exec = (sql: string) => {
      if (sql === 'COMMIT') commits.push(sql);
      return exec(sql);
    };
    const other = new DatabaseSync(join(home, 'channels', 'test', 'kit.db'));
    const doneInFile = () => (other.prepare("SELECT COUNT(*) AS n FROM inbound WHERE state = 'done'").get() as { n: number }).n;
    open1();
    await waitFor(() => doneInFile() === 5, 'five done marks in the file');
    // Five handlers finished in the same turn: one commit for their five marks, not five.
    expect(commits).toHaveLength(1);
    expect(ingress.outcome('m3')).toBe('ok3');

    // Marks made in a turn that also records ride in that record's commit; outcome() sees them before the turn ends.
    ingress.record([{ messageId: 'm6', chatId: 'c6', payload: { n: 6 } }]);
    await ingress.idle();
    expect(doneInFile()).toBe(5); // m6's mark is held until the end of this turn
    commits.length = 0;
    ingress.record([{ messageId: 'm7', chatId: 'c7', payload: { n: 7 } }]);
    expect(commits).toHaveLength(1);
    expect(doneInFile()).toBe(6);
    await ingress.idle();
    expect(ingress.outcome('m7')).toBe('ok7');
    expect(ingress.open()).toBe(0);

    // A mark still held when the store closes is written by the close.
    ingress.record([{ messageId: 'm8', chatId: 'c8', payload: { n: 8 } }]);
    await ingress.idle();
    store.close();
    stores.splice(stores.indexOf(store), 1);
    expect((other.prepare("SELECT outcome FROM inbound WHERE message_id = 'm8'").get() as { outcome: string }).outcome).toBe('ok8');
    other.close();
  });

  it('WriteBehind: rows of one turn are one commit at its end; a refused write is reported and kept; the close writes what is held', async () => {
    const { store, home } = open();
    store.db.exec('CREATE TABLE t (x INTEGER CHECK (x < 10))');
    const errors: Array<[string, number]> = [];
    const behind = new WriteBehind<[number]>(store, store.db.prepare('INSERT INTO t(x) VALUES (?)'), (e, held) =>
      errors.push([String(e), held]),
    );
    const commits: string[] = [];
    const exec = store.db.exec.bind(store.db);
    store.db.exec = (sql: string) => {
      if (sql === 'COMMIT') commits.push(sql);
      return exec(sql);
    };
    const rows = () => (store.db.prepare('SELECT x FROM t ORDER BY x').all() as Array<{ x: number }>).map((r) => r.x);
    behind.add([1]);
    behind.add([2]);
    expect(rows()).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(rows()).toEqual([1, 2]);
    expect(commits).toHaveLength(1);

    behind.add([20]);
    await new Promise((r) => setImmediate(r));
    expect(errors).toHaveLength(1);
    expect(errors[0]![1]).toBe(1);
    expect(() => behind.flush()).toThrow(/CHECK constraint/);
    expect(behind.take()).toEqual([[20]]);

    behind.add([3]);
    store.close();
    stores.splice(stores.indexOf(store), 1);
    const again = open(home);
    expect((again.store.db.prepare('SELECT x FROM t ORDER BY x').all() as Array<{ x: number }>).map((r) => r.x)).toEqual([1, 2, 3]);
  });

  it('entries recorded but not done before a crash are driven again at the next start, in order', async () => {
    const first = open();
    const stuck = new Ingress<{ n: number }>(first.store, { log, handle: () => new Promise(() => {}) });
    stuck.record([1, 2, 3].map((n) => ({ messageId: `m${n}`, chatId: 'a', payload: { n } })));
    first.store.close(); // the process dies: nothing was marked done
    const again = open(first.home);
    const seen: number[] = [];
    const ingress = new Ingress<{ n: number }>(again.store, { log, handle: async (it) => void seen.push(it.payload.n) });
    expect(ingress.recover()).toBe(3);
    await ingress.idle();
    expect(seen).toEqual([1, 2, 3]);
    expect(ingress.recover()).toBe(0);
    // Still deduplicated after the restart.
    expect(ingress.record([{ messageId: 'm2', chatId: 'a', payload: { n: 2 } }])).toHaveLength(0);
  });

  it('a failing handler is retried, then closed as failed without blocking the chat', async () => {
    const { store } = open();
    let calls = 0;
    const seen: string[] = [];
    const ingress = new Ingress<{ n: number }>(store, {
      log,
      maxAttempts: 3,
      retryBaseMs: 1,
      handle: async (it) => {
        if (it.messageId === 'bad') {
          calls++;
          throw new Error('boom');
        }
        seen.push(it.messageId);
      },
    });
    ingress.record([
      { messageId: 'bad', chatId: 'a', payload: { n: 1 } },
      { messageId: 'good', chatId: 'a', payload: { n: 2 } },
    ]);
    await ingress.idle();
    expect(calls).toBe(3);
    expect(seen).toEqual(['good']);
    expect(ingress.outcome('bad')).toMatch(/^failed: boom/);
  });

  it('a message whose queue is out of reach waits for it, past the attempts a failing handler gets, and goes through once', async () => {
    const { store } = open();
    const warned: string[] = [];
    let calls = 0;
    const queued: string[] = [];
    const ingress = new Ingress<{ n: number }>(store, {
      log: { ...log, warn: (m: string) => void warned.push(m) },
      maxAttempts: 2,
      retryBaseMs: 1,
      handle: async (it) => {
        if (++calls <= 7)
          throw Object.assign(new Error("Cannot reach the queue's Redis"), {
            code: calls % 2 ? 'KEEL_E_QUEUE_UNREACHABLE' : 'KEEL_E_QUEUE_LOCKED',
          });
        queued.push(it.messageId);
        return 'queued';
      },
    });
    ingress.record([{ messageId: 'm1', chatId: 'a', payload: { n: 1 } }]);
    await ingress.idle();
    expect(calls).toBe(8);
    expect(queued).toEqual(['m1']);
    expect(ingress.outcome('m1')).toBe('queued');
    expect(warned.filter((w) => /waits for the queue/.test(w))).toHaveLength(1);
  });
});

describe('delivery ledger', () => {
  it('after a crash mid-delivery only unconfirmed chunks are sent; a delivered key is never sent again', async () => {
    const first = open();
    const sent: string[] = [];
    const ledger = new DeliveryLedger(first.store);
    const chunks = ['c0', 'c1', 'c2', 'c3'].map((t) => ({ t }));
    await expect(
      ledger.deliver('act_1:r0', 'chat', chunks, async (c, i) => {
        if (i === 2) throw new Error('process died');
        sent.push(c.t);
        return `id${i}`;
      }),
    ).rejects.toThrow('process died');
    expect(ledger.entries('act_1:r0').map((e) => e.state)).toEqual(['sent', 'sent', 'pending', 'pending']);
    first.store.close();
    const again = open(first.home);
    const l2 = new DeliveryLedger(again.store);
    expect(l2.unfinished()).toEqual([{ key: 'act_1:r0', chatId: 'chat' }]);
    const send = async (c: { t: string }, i: number) => {
      sent.push(c.t);
      return `id${i}`;
    };
    expect(await l2.resume('act_1:r0', send)).toEqual(['id0', 'id1', 'id2', 'id3']);
    // The same key with different content (a re-run that wrote another answer) delivers nothing new.
    expect(await l2.deliver('act_1:r0', 'chat', [{ t: 'other' }], send)).toEqual(['id0', 'id1', 'id2', 'id3']);
    expect(sent).toEqual(['c0', 'c1', 'c2', 'c3']);
    expect(l2.unfinished()).toEqual([]);
  });
  it('first call wins whatever the chunk counts: one stored chunk is not joined by a longer re-run, and vice versa', async () => {
    const { store } = open();
    const ledger = new DeliveryLedger(store);
    const sent: string[] = [];
    const send = async (c: { t: string }, i: number) => {
      sent.push(c.t);
      return `id${sent.length}:${i}`;
    };
    expect(await ledger.deliver('one', 'chat', [{ t: 'a' }], send)).toEqual(['id1:0']);
    expect(await ledger.deliver('one', 'chat', [{ t: 'x' }, { t: 'y' }, { t: 'z' }], send)).toEqual(['id1:0']);
    expect(await ledger.deliver('three', 'chat', [{ t: 'b' }, { t: 'c' }, { t: 'd' }], send)).toHaveLength(3);
    expect(await ledger.deliver('three', 'chat', [{ t: 'x' }], send)).toEqual(['id2:0', 'id3:1', 'id4:2']);
    expect(ledger.entries('one')).toHaveLength(1);
    // A very long message (more chunks than one statement writes) is stored whole too.
    const many = Array.from({ length: 250 }, (_, i) => ({ t: `m${i}` }));
    expect(await ledger.deliver('many', 'chat', many, send)).toHaveLength(250);
    expect(await ledger.deliver('many', 'chat', [{ t: 'x' }], send)).toHaveLength(250);
    expect(sent.filter((t) => t === 'x' || t === 'y' || t === 'z')).toEqual([]);
  });

  it('a ledger written by the first schema (delivery with a rowid and an index) is migrated with its pending chunks', async () => {
    const h = tmp('keel-kit-');
    homes.push(h);
    mkdirSync(join(h, 'channels', 'test'), { recursive: true });
    const old = new DatabaseSync(join(h, 'channels', 'test', 'kit.db'));
    old.exec(`CREATE TABLE delivery (key TEXT NOT NULL, chunk INTEGER NOT NULL, chat_id TEXT NOT NULL, body TEXT NOT NULL,
      state TEXT NOT NULL DEFAULT 'pending', platform_id TEXT, created_at INTEGER NOT NULL, sent_at INTEGER, PRIMARY KEY (key, chunk));
      CREATE INDEX delivery_open ON delivery(state, created_at);
      INSERT INTO delivery VALUES ('k', 0, 'chat', '{"t":"a"}', 'sent', 'id0', 1, 2), ('k', 1, 'chat', '{"t":"b"}', 'pending', NULL, 1, NULL);`);
    old.close();
    const { store } = open(h);
    const ledger = new DeliveryLedger(store);
    expect(ledger.unfinished()).toEqual([{ key: 'k', chatId: 'chat' }]);
    const sent: string[] = [];
    expect(await ledger.resume<{ t: string }>('k', async (c) => (sent.push(c.t), 'id1'))).toEqual(['id0', 'id1']);
    expect(sent).toEqual(['b']);
    expect((store.db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version).toBe(2);
  });
});

describe('delivery ledger: marks written behind', () => {
  const stateOnDisk = (store: ChannelStore, key: string) => {
    // A second connection sees what is committed, not what the ledger holds in memory.
    const db = new DatabaseSync(join(store.dir, 'kit.db'));
    try {
      return (db.prepare('SELECT state FROM delivery WHERE key = ? ORDER BY chunk').all(key) as Array<{ state: string }>).map(
        (r) => r.state,
      );
    } finally {
      db.close();
    }
  };

  it('the chunk is on disk before it is sent; its mark is committed before the next request or at the end of the turn, not waited for', async () => {
    const { store } = open();
    const ledger = new DeliveryLedger(store);
    const atSend: string[][] = [];
    const ids = await ledger.deliver('k1', 'c', [{ t: 'a' }, { t: 'b' }], async (_c, i) => {
      atSend.push(stateOnDisk(store, 'k1'));
      return `id${i}`;
    });
    expect(ids).toEqual(['id0', 'id1']);
    // Written before the first send; chunk 0's mark committed before chunk 1 went out (a crash during chunk 1's
    // request must not resend chunk 0).
    expect(atSend).toEqual([
      ['pending', 'pending'],
      ['sent', 'pending'],
    ]);
    // The duplicate window: chunk 1 sent, confirmed, its mark not yet committed.
    expect(stateOnDisk(store, 'k1')).toEqual(['sent', 'pending']);
    await new Promise((r) => setImmediate(r));
    expect(stateOnDisk(store, 'k1')).toEqual(['sent', 'sent']);
  });

  it('a read of the ledger, a new delivery and closing the store all commit the held marks first', async () => {
    const { home, store } = open();
    const ledger = new DeliveryLedger(store);
    await ledger.deliver('k1', 'c', [{ t: 'a' }], async () => 'id0');
    expect(ledger.entries('k1')).toEqual([{ chunk: 0, state: 'sent', platformId: 'id0' }]);
    expect(stateOnDisk(store, 'k1')).toEqual(['sent']);

    await ledger.deliver('k2', 'c', [{ t: 'a' }], async () => 'id1');
    await ledger.deliver('k3', 'c', [{ t: 'a' }], async () => 'id2');
    expect(stateOnDisk(store, 'k2')).toEqual(['sent']);

    await ledger.deliver('k4', 'c', [{ t: 'a' }], async () => 'id3');
    store.close();
    const again = open(home).store;
    expect(new DeliveryLedger(again).unfinished()).toEqual([]);
    expect(stateOnDisk(again, 'k4')).toEqual(['sent']);
  });

  it('a mark the store refuses is kept and written by the next flush, never dropped', async () => {
    const { store } = open();
    const ledger = new DeliveryLedger(store);
    await ledger.deliver('k1', 'c', [{ t: 'a' }], async () => 'id0');
    // Another writer holds the file: the flush fails (busy), the mark stays held.
    store.db.exec('PRAGMA busy_timeout=0');
    const other = new DatabaseSync(join(store.dir, 'kit.db'));
    other.exec('BEGIN IMMEDIATE');
    expect(() => ledger.flush()).toThrow(/locked|busy/i);
    other.exec('ROLLBACK');
    other.close();
    ledger.flush();
    expect(stateOnDisk(store, 'k1')).toEqual(['sent']);
  });
});

describe('platform nonces', () => {
  it('the same chunk gets the same nonce in every attempt (Discord: at most 25 characters), other chunks others', async () => {
    const { store } = open();
    const ledger = new DeliveryLedger(store);
    const seen: string[] = [];
    await expect(
      ledger.deliver('act_9:r0', 'c', [{ t: 'a' }, { t: 'b' }], async (_c, i, _chat, key) => {
        seen.push(platformNonce(key, i));
        if (i === 1) throw new Error('crash');
        return 'x';
      }),
    ).rejects.toThrow('crash');
    await ledger.resume('act_9:r0', async (_c, i, _chat, key) => {
      seen.push(platformNonce(key, i));
      return 'y';
    });
    expect(seen).toHaveLength(3);
    expect(seen[1]).toBe(seen[2]);
    expect(seen[0]).not.toBe(seen[1]);
    for (const n of seen) expect(n.length).toBeLessThanOrEqual(25);
  });

  it('nonces of different keys and chunks do not collide (100,000 of them)', () => {
    const all = new Set<string>();
    for (let k = 0; k < 20_000; k++) for (let i = 0; i < 5; i++) all.add(platformNonce(`act_${k}:r${k % 3}`, i));
    expect(all.size).toBe(100_000);
  });
});

describe('outbox and rate limits', () => {
  it('a 429 in the middle of a reply waits retry_after and resends that chunk: nothing dropped or reordered', async () => {
    const { store } = open();
    const limiter = new RateLimiter({
      send: { capacity: 100, perSecond: 100 },
      edit: { capacity: 1, perSecond: 1 },
      global: { capacity: 100, perSecond: 100 },
    });
    const rateLimited = Object.assign(new Error('429'), { retryAfterMs: 300 });
    const outbox = new Outbox({
      ledger: new DeliveryLedger(store),
      limiter,
      log,
      classify: (e) => ((e as { retryAfterMs?: number }).retryAfterMs ? { retry: true, afterMs: 300 } : { retry: false }),
    });
    const accepted: Array<{ t: string; at: number }> = [];
    let failedAt = 0;
    let attempts = 0;
    const ids = await outbox.deliver(
      'k',
      'chat',
      ['a', 'b', 'c', 'd'].map((t) => ({ t })),
      async (c) => {
        attempts++;
        if (c.t === 'b' && !failedAt) {
          failedAt = Date.now();
          throw rateLimited;
        }
        accepted.push({ t: c.t, at: Date.now() });
        return c.t;
      },
    );
    expect(ids).toEqual(['a', 'b', 'c', 'd']);
    expect(accepted.map((a) => a.t)).toEqual(['a', 'b', 'c', 'd']);
    expect(attempts).toBe(5);
    // retry_after was honoured (a lower bound, not a speed limit).
    expect(accepted[1]!.at - failedAt).toBeGreaterThanOrEqual(290);
  });

  it('two messages to one chat are never interleaved', async () => {
    const { store } = open();
    const limiter = new RateLimiter({
      send: { capacity: 100, perSecond: 100 },
      edit: { capacity: 1, perSecond: 1 },
      global: { capacity: 100, perSecond: 100 },
    });
    const outbox = new Outbox({ ledger: new DeliveryLedger(store), limiter, log, classify: () => ({ retry: false }) });
    const order: string[] = [];
    const send = async (c: { t: string }) => {
      await new Promise((r) => setTimeout(r, c.t.startsWith('x') ? 10 : 1));
      order.push(c.t);
      return c.t;
    };
    await Promise.all([
      outbox.deliver('k1', 'chat', [{ t: 'x1' }, { t: 'x2' }], send),
      outbox.deliver('k2', 'chat', [{ t: 'y1' }, { t: 'y2' }], send),
    ]);
    expect(order).toEqual(['x1', 'x2', 'y1', 'y2']);
  });

  it('a token bucket gives its burst, then one token per 1/rate', () => {
    const b = new TokenBucket({ capacity: 2, perSecond: 1 });
    const t = Date.now() + 5;
    expect([b.take(t), b.take(t)]).toEqual([0, 0]);
    expect(b.take(t)).toBe(1000);
    expect(b.take(t + 1000)).toBe(0);
  });
});

describe('connection supervisor', () => {
  it('a connection that comes up and fails at once every time keeps backing off; one that shows life starts over', async () => {
    const waits: number[] = [];
    let n = 0;
    const sup = new ConnectionSupervisor({
      name: 't',
      log: { ...log, warn: (m: string) => waits.push(Number(/reconnecting in (\d+) ms/.exec(m)?.[1])) },
      stallMs: 5000,
      backoff: { baseMs: 10, maxMs: 10_000 },
      fatal: () => undefined,
      connect: async (_signal, { connected, live }) => {
        n++;
        connected();
        // The 7th connection answers once (a sign of life) before it drops: the backoff starts over.
        if (n === 7) live();
        throw new Error('409: terminated by other getUpdates request');
      },
    });
    sup.start();
    await waitFor(() => waits.length >= 7, '7 drops');
    await sup.stop();
    // 10 ms x 2^k, jittered to between half and all of it: the 6th wait is at least 160 ms, the first at most 10.
    expect(waits[0]).toBeLessThanOrEqual(10);
    expect(waits[5]).toBeGreaterThanOrEqual(160);
    expect(waits[6]).toBeLessThanOrEqual(10);
  });

  it('a lock that cannot be looked at (a full disk, Redis down) is waited out, not the end of the process', async () => {
    let tries = 0;
    const sup = new ConnectionSupervisor({
      name: 't',
      log,
      stallMs: 5000,
      lockRetryMs: 10,
      fatal: () => undefined,
      lock: {
        acquire: () => {
          if (++tries < 3) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
          return { ok: true };
        },
        release: () => undefined,
      },
      connect: async (signal, { connected }) => {
        connected();
        await new Promise((r) => signal.addEventListener('abort', r));
      },
    });
    const states: string[] = [];
    sup.onState((s) => states.push(s));
    sup.start();
    await waitFor(() => sup.state === 'connected', 'connected');
    expect(tries).toBe(3);
    expect(sup.lastError).toBe('Not connecting: ENOSPC: no space left on device, write; trying again.');
    expect(states).not.toContain('failed');
    await sup.stop();
  });

  it('reconnects with backoff after errors and after a stall; stops for good on a fatal error', async () => {
    let n = 0;
    const sup = new ConnectionSupervisor({
      name: 't',
      log,
      stallMs: 200,
      backoff: { baseMs: 10, maxMs: 20 },
      fatal: (e) => ((e as Error).message === 'bad token' ? 'The token is invalid.' : undefined),
      connect: async (signal, { connected, live }) => {
        n++;
        if (n === 1) throw new Error('network down');
        connected();
        live();
        if (n === 2) {
          // Silent: only the watchdog ends this.
          await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
        }
        throw new Error('bad token');
      },
    });
    sup.start();
    await waitFor(() => sup.state === 'failed', 'failed');
    expect(n).toBe(3);
    expect(sup.reconnects).toBe(2);
    expect(sup.status()).toMatchObject({ connected: false, state: 'failed', lastError: 'The token is invalid.' });
    await new Promise((r) => setTimeout(r, 100));
    expect(n).toBe(3);
    await sup.stop();
  });

  it("a connection ended with 'reconnect' (the platform asked) is opened again at once, not counted as a drop; one asked for right away still backs off", async () => {
    let n = 0;
    const warned: string[] = [];
    const sup = new ConnectionSupervisor({
      name: 't',
      log: { ...log, warn: (m: string) => warned.push(m) },
      stallMs: 5000,
      backoff: { baseMs: 10, maxMs: 20 },
      fatal: () => undefined,
      connect: async (signal, { connected }) => {
        n++;
        connected();
        if (n === 1) {
          await new Promise((r) => setTimeout(r, 1100));
          return 'reconnect';
        }
        if (n === 2) return 'reconnect'; // at once again: treated as a drop
        await new Promise((r) => signal.addEventListener('abort', r));
      },
    });
    sup.start();
    await waitFor(() => n === 3 && sup.state === 'connected', 'third connection');
    expect(sup.reconnects).toBe(1);
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatch(/asked for a new connection right away/);
    await sup.stop();
  });
});

describe('connection supervisor: what it says', () => {
  it('one info line with who it connected as when first up, "connected again" after a failure, nothing for a renewal the platform asked for', async () => {
    let n = 0;
    const infos: string[] = [];
    const sup = new ConnectionSupervisor({
      name: 't',
      log: { ...log, info: (m: string) => infos.push(m) },
      stallMs: 5000,
      backoff: { baseMs: 10, maxMs: 20 },
      fatal: () => undefined,
      connect: async (signal, { connected }) => {
        n++;
        connected('as @bot (user 7)');
        if (n === 1) {
          await new Promise((r) => setTimeout(r, 1100));
          return 'reconnect'; // renewal asked for by the platform
        }
        if (n === 2) throw new Error('socket reset');
        await new Promise((r) => signal.addEventListener('abort', r));
      },
    });
    sup.start();
    await waitFor(() => n === 3 && sup.state === 'connected', 'third connection');
    expect(infos).toEqual(['t: connected as @bot (user 7).', 't: connected again.']);
    await sup.stop();
  });
});

describe('connection supervisor: restart', () => {
  it('restart(reason) rebuilds an open connection as the watchdog does (reason as lastError, one reconnect, logged at info); nothing when no connection is open or once stopped', async () => {
    let n = 0;
    const warned: string[] = [];
    const infos: string[] = [];
    const sup = new ConnectionSupervisor({
      name: 't',
      log: { ...log, warn: (m: string) => warned.push(m), info: (m: string) => infos.push(m) },
      stallMs: 60_000,
      backoff: { baseMs: 10, maxMs: 20 },
      fatal: () => 'never fatal here',
      connect: async (signal, { connected }) => {
        n++;
        connected();
        // What a transport throws on its way out of an aborted connection is not taken for a fatal error.
        await new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('socket closed'))));
      },
    });
    sup.restart('before any connection'); // nothing to rebuild
    sup.start();
    await waitFor(() => sup.state === 'connected', 'connected');
    sup.restart('the platform stopped delivering events');
    await waitFor(() => n === 2 && sup.state === 'connected', 'a second connection');
    expect(sup.reconnects).toBe(1);
    expect(sup.status().lastError).toBe('the platform stopped delivering events');
    expect(warned).toEqual([]);
    expect(infos.some((m) => /connection lost \(the platform stopped delivering events\)/.test(m))).toBe(true);
    await sup.stop();
    sup.restart('after stop');
    await new Promise((r) => setTimeout(r, 50));
    expect(n).toBe(2);
    expect(sup.state).toBe('stopped');
  });
});

describe('progress feedback', () => {
  it('typing refreshes until stop, then never again; status edits are coalesced and the status message ended', async () => {
    const calls: string[] = [];
    const p = new ProgressFeedback({
      log,
      refreshMs: 30,
      editMinMs: 60,
      transport: {
        typing: async (c) => void calls.push(`typing:${c}`),
        status: async (_c, text, id) => {
          calls.push(`status:${id ?? 'new'}:${text}`);
          return id ?? 's1';
        },
        finish: async (_c, id) => void calls.push(`finish:${id}`),
      },
    });
    p.update('a1', 'c', { typingOnly: false, thought: 'one', step: 1 });
    await new Promise((r) => setTimeout(r, 20));
    p.update('a1', 'c', { typingOnly: false, thought: 'two', step: 2 });
    p.update('a1', 'c', { typingOnly: false, thought: 'three', step: 3 });
    await new Promise((r) => setTimeout(r, 200));
    await p.stop('a1');
    const stoppedAt = calls.length;
    await new Promise((r) => setTimeout(r, 120));
    expect(calls.length).toBe(stoppedAt);
    expect(calls.filter((c) => c.startsWith('typing')).length).toBeGreaterThan(2);
    const statuses = calls.filter((c) => c.startsWith('status'));
    expect(statuses[0]).toBe('status:new:\u23f3 Step 1: one');
    expect(statuses.at(-1)).toBe('status:s1:\u23f3 Step 3: three');
    expect(statuses).toHaveLength(2);
    expect(calls.at(-1)).toBe('finish:s1');
    expect(p.active('a1')).toBe(false);
  });

  it('the failure notice is one short line without stack or paths', () => {
    expect(failureNotice('Error: provider timeout\n    at call (/app/x.js:10:5)')).toBe(
      'Sorry, that did not work: Error: provider timeout',
    );
    expect(failureNotice(undefined)).toBe('Sorry, that did not work.');
    expect(failureNotice('x'.repeat(500)).length).toBeLessThan(240);
  });
});
