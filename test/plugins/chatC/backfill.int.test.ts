/**
 * chatC's history catch-up after a new gateway session (Discord replays nothing to a new session): only the channels
 * being read hold their live messages (one slow channel does not hold up the others); a long gap is read newest
 * first over several pages, each message once and in order; a channel whose read fails keeps its cursor, so the next
 * session reads the gap.
 */
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers.js';
import { bootChatC, type ChatCHarness, USER } from './harness.js';

let h: ChatCHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const tasks = () => h!.actions().map((a) => a.task);
const has = (task: string) => tasks().includes(task);
const connected = () => h!.channel().status().connected;
const OTHER = '320000000000000777';
const warnings = (re: RegExp) => h!.logs.recent({ level: 'warn', limit: 1000 }).filter((e) => re.test(e.message));

/** Message ids of a channel in the order the ingress recorded them. */
function recorded(channelId: string): string[] {
  const db = new DatabaseSync(join(h!.home, 'channels', 'chatC', 'kit.db'), { readOnly: true });
  try {
    return (
      db.prepare('SELECT message_id FROM inbound WHERE chat_id = ? ORDER BY seq').all(channelId) as Array<{ message_id: string }>
    ).map((r) => r.message_id);
  } finally {
    db.close();
  }
}

describe('chatC history catch-up after a new session', () => {
  it('a channel whose history is still being read holds only its own live messages: another channel is answered meanwhile', async () => {
    h = await bootChatC({ runAgent: false });
    await waitFor(connected, 'connected');
    const first = h.dc.pushMessage('hello in A', { userId: USER });
    h.dc.pushMessage('hello in B', { userId: USER, channelId: OTHER });
    await waitFor(() => has('hello in A') && has('hello in B'), 'two actions');

    await h.kernel.stop();
    const missed = [h.dc.pushMessage('missed in A 1', { userId: USER }), h.dc.pushMessage('missed in A 2', { userId: USER })];
    let release!: () => void;
    h.dc.historyGates.set(h.dc.channelId, new Promise<void>((r) => (release = r)));
    await h.restart();
    await waitFor(() => connected() && h!.dc.callsOf('GET /channels/:id/messages').length >= 2, 'both histories asked for');

    const liveA = h.dc.pushMessage('live in A', { userId: USER });
    h.dc.pushMessage('live in B', { userId: USER, channelId: OTHER });
    await waitFor(() => has('live in B'), 'the other channel answered while A is read');
    expect(has('live in A')).toBe(false);
    expect(has('missed in A 1')).toBe(false);

    release();
    await waitFor(() => has('live in A'), 'A after its history');
    // A's messages were recorded in the order they were written: the gap first, then the live one.
    expect(recorded(h.dc.channelId)).toEqual([first.id, ...missed.map((m) => m.id), liveA.id]);
    expect(tasks().filter((t) => t.startsWith('missed in A'))).toHaveLength(2);
  });

  it('a long gap (150 messages) is read newest first over pages, each message once, recorded oldest first', async () => {
    h = await bootChatC({ runAgent: false });
    await waitFor(connected, 'connected');
    const first = h.dc.pushMessage('start', { userId: USER });
    await waitFor(() => has('start'), 'first action');
    await h.kernel.stop();
    const gap = Array.from({ length: 150 }, (_, i) => h!.dc.pushMessage(`gap ${i + 1}`, { userId: USER }));
    await h.restart();
    await waitFor(() => h!.actions().length === 151, 'the whole gap', 20_000);
    const st = h.channel().status() as { caughtUp?: number; lastCatchUpAt?: string };
    expect(st.caughtUp).toBe(150);
    expect(st.lastCatchUpAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(recorded(h.dc.channelId)).toEqual([first.id, ...gap.map((m) => m.id)]);
    const reads = h.dc.callsOf('GET /channels/:id/messages').map((c) => c.query);
    expect(reads).toHaveLength(2);
    expect(reads[0]!.get('before')).toBeNull();
    expect(reads[1]!.get('before')).toBe(gap[50]!.id);
    // A later session finds nothing new.
    await h.restart();
    await waitFor(() => connected() && h!.dc.callsOf('GET /channels/:id/messages').length === 3, 'read again');
    await new Promise((r) => setTimeout(r, 300));
    expect(h.actions()).toHaveLength(151);
  });

  it('a channel whose history cannot be read keeps its cursor: its live messages do not move it, and the next session reads the gap', async () => {
    h = await bootChatC({ runAgent: false });
    await waitFor(connected, 'connected');
    h.dc.pushMessage('before', { userId: USER });
    await waitFor(() => has('before'), 'first action');
    await h.kernel.stop();
    h.dc.pushMessage('in the gap', { userId: USER });
    h.dc.failNext('GET /channels/:id/messages', { status: 403, message: 'Missing Access', code: 50001 });
    await h.restart();
    const warning = await waitFor(() => warnings(/could not read the history of channel/)[0], 'the warning');
    expect(warning.message).toMatch(/Missing Access.*its cursor stays until the next new session reads it/);
    expect(has('in the gap')).toBe(false);

    h.dc.pushMessage('live after', { userId: USER });
    await waitFor(() => has('live after'), 'the live message');
    await h.restart();
    await waitFor(() => has('in the gap'), 'the gap, read by the next session');
    await new Promise((r) => setTimeout(r, 300));
    expect(tasks().sort()).toEqual(['before', 'in the gap', 'live after']);
    expect(JSON.stringify(h.logs.recent({ limit: 1000 }))).not.toContain(h.dc.token);
  });
  it('a channel Keel never heard from, written in while Keel was away, is read from when Keel was last connected; a channel with nothing newer, or whose history the bot may not read, is not asked', async () => {
    h = await bootChatC({ runAgent: false });
    await waitFor(connected, 'connected');
    h.dc.pushMessage('hello in A', { userId: USER });
    await waitFor(() => has('hello in A'), 'first action');
    // Said (and lost) long before: no cursor, and older than when Keel was last connected.
    const OLD = '320000000000000888';
    h.dc.pushMessage('long ago, never delivered', { userId: USER, channelId: OLD, at: Date.now() - 600_000, historyOnly: true });

    await h.kernel.stop();
    const NEW = '320000000000000999';
    const HIDDEN = '320000000000000555';
    h.dc.noHistoryAccess.add(HIDDEN);
    const away = [
      h.dc.pushMessage('while away, in a new channel', { userId: USER, channelId: NEW, mention: true }),
      h.dc.pushMessage('and a second one', { userId: USER, channelId: NEW }),
    ];
    h.dc.pushMessage('while away, where history is hidden', { userId: USER, channelId: HIDDEN, mention: true });
    // A thread started while Keel was away: an active thread of GUILD_CREATE.
    const THREAD = '330000000000000222';
    const inThread = h.dc.pushMessage('while away, in a new thread', { userId: USER, channelId: THREAD, threadOf: h.dc.channelId });
    const before = h.dc.callsOf('GET /channels/:id/messages').length;
    await h.restart();
    await waitFor(
      () => tasks().filter((t) => /while away, in a new (channel|thread)|and a second one/.test(t)).length === 3,
      'both, from the history',
    );
    expect(recorded(NEW)).toEqual(away.map((m) => m.id));
    expect(recorded(THREAD)).toEqual([inThread.id]);
    const read = new Set(
      h.dc
        .callsOf('GET /channels/:id/messages')
        .slice(before)
        .map((c) => c.path.split('/')[2]),
    );
    expect(read).toEqual(new Set([h.dc.channelId, NEW, THREAD]));
    expect((h.channel().status() as { caughtUp?: number }).caughtUp).toBe(3);

    // NEW has a cursor now: its live messages go on from there, each once.
    h.dc.pushMessage('live in the new channel', { userId: USER, channelId: NEW });
    await waitFor(() => has('live in the new channel'), 'the live message');
    await new Promise((r) => setTimeout(r, 300));
    expect(tasks().filter((t) => /while away|second one|long ago|live in the new/.test(t))).toHaveLength(4);
    expect(warnings(/could not read the history/)).toHaveLength(0);
  });

  it("a thread started and archived while Keel was away for over an hour is found among its channel's archived threads and read; its next live message waits for that; a thread archived before, or after a short absence, is not listed", async () => {
    h = await bootChatC({ runAgent: false });
    await waitFor(connected, 'connected');
    h.dc.pushMessage('hello in A', { userId: USER });
    await waitFor(() => has('hello in A'), 'first action');
    // A thread archived long before Keel was away: listed by Discord, not read.
    const OLD_THREAD = '330000000000000111';
    h.dc.pushMessage('an old thread', {
      userId: USER,
      channelId: OLD_THREAD,
      threadOf: h.dc.channelId,
      at: Date.now() - 10_800_000,
      historyOnly: true,
    });
    h.dc.archiveThread(OLD_THREAD, Date.now() - 9_000_000);

    await h.kernel.stop();
    // Away for two hours: a thread was started and archived meanwhile.
    h.alive(Date.now() - 7_200_000);
    const THREAD = '330000000000000333';
    const away = h.dc.pushMessage('in a thread, while away', {
      userId: USER,
      channelId: THREAD,
      threadOf: h.dc.channelId,
      mention: true,
      at: Date.now() - 5_400_000,
    });
    h.dc.archiveThread(THREAD, Date.now() - 1_800_000);
    let release!: () => void;
    h.dc.historyGates.set(h.dc.channelId, new Promise<void>((r) => (release = r)));
    const lists = () => h!.dc.callsOf('GET /channels/:id/threads/archived/public');
    await h.restart();
    await waitFor(() => connected() && lists().length === 1, 'the archived threads asked for');
    expect(lists()[0]!.path).toBe(`/channels/${h.dc.channelId}/threads/archived/public`);

    // Someone writes in the thread again (which unarchives it) while the list is not in yet: it waits.
    const live = h.dc.pushMessage('live in the thread', { userId: USER, channelId: THREAD });
    await new Promise((r) => setTimeout(r, 300));
    expect(has('live in the thread')).toBe(false);
    release();
    await waitFor(() => has('in a thread, while away') && has('live in the thread'), 'both', 15_000);
    expect(recorded(THREAD)).toEqual([away.id, live.id]);
    const read = new Set(h.dc.callsOf('GET /channels/:id/messages').map((c) => c.path.split('/')[2]));
    expect(read.has(THREAD)).toBe(true);
    expect(read.has(OLD_THREAD)).toBe(false);
    expect(has('an old thread')).toBe(false);

    // A short absence: no thread can have archived itself meanwhile, so none is listed.
    await h.kernel.stop();
    await h.restart();
    await waitFor(() => connected() && (h!.channel().status() as { lastCatchUpAt?: string }).lastCatchUpAt !== undefined, 'caught up');
    expect(lists()).toHaveLength(1);
    expect(tasks().filter((t) => t === 'in a thread, while away')).toHaveLength(1);
  });

  it('stopped while a channel never heard from is still being read, the next start reads it again from when Keel was away (the mark did not move)', async () => {
    h = await bootChatC({ runAgent: false });
    await waitFor(connected, 'connected');
    h.dc.pushMessage('hello in A', { userId: USER });
    await waitFor(() => has('hello in A'), 'first action');
    await h.kernel.stop();
    h.alive(Date.now() - 600_000);
    const away = h.alive();
    const NEW = '320000000000000998';
    h.dc.pushMessage('said while Keel was away', { userId: USER, channelId: NEW, at: Date.now() - 300_000, mention: true });
    let release!: () => void;
    h.dc.historyGates.set(NEW, new Promise<void>((r) => (release = r)));
    const reads = () => h!.dc.callsOf('GET /channels/:id/messages').filter((c) => c.path.includes(NEW)).length;
    await h.restart();
    await waitFor(() => reads() === 1, 'the read begun');
    await h.kernel.stop();
    expect(h!.alive()).toBe(away);
    expect(has('said while Keel was away')).toBe(false);

    release();
    h.dc.historyGates.delete(NEW);
    await h.restart();
    await waitFor(() => has('said while Keel was away'), 'read at the next start', 15_000);
    await waitFor(() => h!.alive() > away, 'the mark moved once it was read');
  });

  it('a session that stops delivering messages (heartbeats still acknowledged) is found by a periodic read of the history: the message becomes one action, one warning, a new session', async () => {
    h = await bootChatC({ runAgent: false, config: { chatCCatchUpInterval: 1 } });
    await waitFor(connected, 'connected');
    h.dc.pushMessage('heard live', { userId: USER, at: Date.now() - 300_000 });
    await waitFor(() => has('heard live'), 'the live message');
    const identifies = h.dc.gateway.identifies;

    h.dc.withholdMessages = true;
    h.dc.pushMessage('never delivered', { userId: USER, at: Date.now() - 120_000 });
    await waitFor(() => has('never delivered'), 'the undelivered message, from the history', 15_000);
    const warning = await waitFor(() => warnings(/did not deliver/)[0], 'the warning');
    expect(warning.message).toBe(
      `chatC: the Discord session did not deliver 1 message(s) (in channel ${h.dc.channelId}); they were read from the history. Rebuilding the connection with a new session.`,
    );
    h.dc.withholdMessages = false;
    await waitFor(() => h!.dc.gateway.identifies > identifies && connected(), 'a new session', 15_000);
    expect(h.channel().status().lastError).toMatch(/stopped delivering messages/);

    // A fresh message a sweep finds before the gateway brings it is recorded, and is no reason to rebuild.
    h.dc.withholdMessages = true;
    h.dc.pushMessage('fresh, found in the history first', { userId: USER });
    await waitFor(() => has('fresh, found in the history first'), 'the fresh message, from the history', 15_000);
    h.dc.withholdMessages = false;
    const st = h.channel().status() as { caughtUp?: number };
    expect(st.caughtUp).toBe(2);
    await new Promise((r) => setTimeout(r, 1500));
    expect(warnings(/did not deliver/)).toHaveLength(1);
    expect(tasks().sort()).toEqual(['fresh, found in the history first', 'heard live', 'never delivered']);
  });
  it('one message the session dropped between two it delivered is found by the next sweep (read from where the previous read ended), once', async () => {
    h = await bootChatC({ runAgent: false, config: { chatCCatchUpInterval: 1 } });
    await waitFor(connected, 'connected');
    h.dc.pushMessage('one', { userId: USER, at: Date.now() - 300_000 });
    await waitFor(() => has('one'), 'the first message');
    // A sweep reads the channel once, so the next one reads from there.
    const before = (h.channel().status() as { lastCatchUpAt?: string }).lastCatchUpAt;
    await waitFor(() => (h!.channel().status() as { lastCatchUpAt?: string }).lastCatchUpAt !== before, 'a sweep', 10_000);
    h.dc.pushMessage('dropped', { userId: USER, at: Date.now() - 200_000, historyOnly: true });
    h.dc.pushMessage('three', { userId: USER, at: Date.now() - 100_000 });
    await waitFor(() => has('three'), 'the third, live');
    await waitFor(() => has('dropped'), 'the dropped one, from the history', 15_000);
    await waitFor(() => warnings(/did not deliver 1 message/).length === 1, 'the warning');
    await new Promise((r) => setTimeout(r, 1500));
    expect(tasks().sort()).toEqual(['dropped', 'one', 'three']);
  });
});
