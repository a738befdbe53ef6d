/**
 * Crash recovery of progress feedback: a status message shown by a process that died (its store closed without the
 * status being ended) is ended by the next process's `recover()`, exactly once, and then forgotten.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ChannelStore, INTERRUPTED_LINE, ProgressFeedback, type ProgressTransport } from '../../sdk/channel-kit/index.js';
import { rm, tmp, waitFor } from '../helpers.js';

const log = { debug() {}, info() {}, warn() {}, error() {} };
const homes: string[] = [];
const stores: ChannelStore[] = [];
const feedbacks: ProgressFeedback[] = [];
afterEach(async () => {
  for (const p of feedbacks.splice(0)) await p.stopAll();
  for (const s of stores.splice(0)) s.close();
  for (const h of homes.splice(0)) rm(h);
});

function open(home: string): ChannelStore {
  const s = ChannelStore.open(home, 'test');
  stores.push(s);
  return s;
}

/** A platform that hands out message ids and remembers which messages exist and what they say. */
function platform(o: { deleteFails?: boolean } = {}) {
  let next = 100;
  const messages = new Map<string, string>();
  const calls: string[] = [];
  const transport: ProgressTransport = {
    typing: async () => undefined,
    status: async (chatId, text, id) => {
      calls.push(`status:${chatId}:${id ?? 'new'}:${text}`);
      const mid = id ?? String(next++);
      messages.set(mid, text);
      return mid;
    },
    finish: async (chatId, id) => {
      calls.push(`finish:${chatId}:${id}`);
      if (o.deleteFails) throw new Error("Bad Request: message can't be deleted");
      messages.delete(id);
    },
  };
  return { transport, messages, calls };
}

/** The first process's view of the platform: after kill() it does nothing more (a killed process sends nothing). */
function killable(t: ProgressTransport): { transport: ProgressTransport; kill(): void } {
  let dead = false;
  return {
    transport: {
      typing: async (c) => (dead ? undefined : t.typing(c)),
      status: async (c, text, id) => (dead ? (id ?? '') : t.status(c, text, id)),
      finish: async (c, id) => (dead ? undefined : t.finish?.(c, id)),
    },
    kill: () => {
      dead = true;
    },
  };
}

/** Runs an action's status in a first process, then kills it: the store closed, nothing ended. */
async function crashWithStatus(home: string, tg: ReturnType<typeof platform>, actionId: string, chatId: string, thought: string) {
  const store = ChannelStore.open(home, 'test');
  const k = killable(tg.transport);
  const p = new ProgressFeedback({ log, transport: k.transport, store, refreshMs: 1000, editMinMs: 10 });
  p.update(actionId, chatId, { typingOnly: false, thought });
  await waitFor(() => store.values('status:').length === 1, 'status recorded');
  const recorded = JSON.parse(store.values('status:')[0]!.value) as unknown;
  store.close();
  k.kill();
  await p.stopAll(); // only clears the dead process's timers
  tg.calls.length = 0;
  return recorded;
}

function feedback(store: ChannelStore, transport: ProgressTransport): ProgressFeedback {
  const p = new ProgressFeedback({ log, transport, store, refreshMs: 1000, editMinMs: 10 });
  feedbacks.push(p);
  return p;
}

describe('progress feedback crash recovery', () => {
  it('a status message left by a killed process is deleted once by the next process, and nothing stays recorded', async () => {
    const home = tmp('keel-progress-');
    homes.push(home);
    const tg = platform();
    // First process: the action shows a status message, then the process dies (no stop, no finish).
    expect(await crashWithStatus(home, tg, 'act-1', 'chat-7', 'working')).toEqual({ chatId: 'chat-7', messageId: '100' });
    expect([...tg.messages.keys()]).toEqual(['100']);

    // Second process on the reopened store.
    const second = open(home);
    const p2 = feedback(second, tg.transport);
    expect(await p2.recover()).toBe(1);
    expect(tg.calls).toEqual(['finish:chat-7:100']);
    expect(tg.messages.size).toBe(0);
    expect(second.values('status:')).toEqual([]);
    // Calling it again (a reconnect) finds nothing more.
    expect(await p2.recover()).toBe(0);
    expect(tg.calls).toEqual(['finish:chat-7:100']);
  });

  it('the action re-run after the crash gets a fresh status message; the old one is ended first, even before recover()', async () => {
    const home = tmp('keel-progress-');
    homes.push(home);
    const tg = platform();
    await crashWithStatus(home, tg, 'act-2', 'chat-8', 'before the crash');

    const second = open(home);
    const p2 = feedback(second, tg.transport);
    p2.update('act-2', 'chat-8', { typingOnly: false, thought: 'after the restart' });
    await waitFor(() => tg.calls.some((c) => c.startsWith('status:chat-8:new')), 'fresh status');
    expect(tg.calls).toEqual(['finish:chat-8:100', 'status:chat-8:new:\u23f3 after the restart']);
    expect(JSON.parse(second.getValue('status:act-2')!)).toEqual({ chatId: 'chat-8', messageId: '101' });
    // recover() now leaves the live status of this process alone.
    expect(await p2.recover()).toBe(0);
    expect([...tg.messages.keys()]).toEqual(['101']);
    await p2.stop('act-2');
    expect(tg.calls.at(-1)).toBe('finish:chat-8:101');
    expect(tg.messages.size).toBe(0);
    expect(second.values('status:')).toEqual([]);
  });

  it('a leftover that cannot be deleted is edited to the interrupted line, then forgotten', async () => {
    const home = tmp('keel-progress-');
    homes.push(home);
    const tg = platform({ deleteFails: true });
    await crashWithStatus(home, tg, 'act-3', 'chat-9', 'step');

    const second = open(home);
    const p2 = feedback(second, tg.transport);
    expect(await p2.recover()).toBe(1);
    expect(tg.calls).toEqual(['finish:chat-9:100', `status:chat-9:100:${INTERRUPTED_LINE}`]);
    expect(tg.messages.get('100')).toBe(INTERRUPTED_LINE);
    expect(second.values('status:')).toEqual([]);
  });

  it('a status message ended normally leaves no record; one whose delete failed is retried by the next recover()', async () => {
    const home = tmp('keel-progress-');
    homes.push(home);
    const store = open(home);
    const tg = platform();
    const p = feedback(store, tg.transport);
    p.update('ok', 'c1', { typingOnly: false, thought: 'x' });
    await waitFor(() => store.values('status:').length === 1, 'recorded');
    await p.stop('ok');
    expect(store.values('status:')).toEqual([]);

    let fail = true;
    const flaky: ProgressTransport = {
      ...tg.transport,
      finish: async (c, id) => {
        if (fail) throw new Error('network down');
        await tg.transport.finish!(c, id);
      },
    };
    const q = feedback(store, flaky);
    q.update('flaky', 'c2', { typingOnly: false, thought: 'y' });
    await waitFor(() => store.values('status:').length === 1, 'recorded');
    const id = JSON.parse(store.getValue('status:flaky')!).messageId as string;
    await q.stop('flaky');
    expect(JSON.parse(store.getValue('status:flaky')!)).toMatchObject({ messageId: id, settled: true });
    fail = false;
    expect(await q.recover()).toBe(1);
    expect(tg.messages.has(id)).toBe(false);
    expect(store.values('status:')).toEqual([]);
  });

  it('deleteValue removes one key and is quiet about a missing one', () => {
    const home = tmp('keel-progress-');
    homes.push(home);
    const store = open(home);
    store.setValue('status:a', '1');
    store.setValue('status:b', '2');
    store.deleteValue('status:a');
    store.deleteValue('status:none');
    expect(store.values('status:')).toEqual([{ key: 'status:b', value: '2' }]);
  });
});
