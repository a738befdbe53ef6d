/**
 * chatD's catch-up from the conversation history (conversations.history after a cursor per conversation): messages
 * Slack does not send again after Keel was stopped, and messages a "deaf" socket (open, pinging, but delivering no
 * events) never brought, become actions once each and in order; the deaf connection is rebuilt; a conversation whose
 * history cannot be read (not_in_channel, a rate limit) is reported once and does not stop the others. Thread replies
 * (not in conversations.history) are read with conversations.replies, for the threads heard from and those the
 * history shows new replies in.
 */
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChatDStatus } from '../../../plugins/chatD/src/live.js';
import { waitFor } from '../../helpers.js';
import { bootChatD, type ChatDHarness } from './harness.js';

let h: ChatDHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const status = () => h!.channel().status() as ChatDStatus;
const connected = () => status().connected;
const tasks = () => h!.actions().map((a) => a.task);
const has = (task: string) => tasks().includes(task);
const historyReads = (channel: string) => h!.slack.callsOf('conversations.history').filter((c) => c.params.channel === channel);
const warnings = (re: RegExp) => h!.logs.recent({ level: 'warn', limit: 1000 }).filter((e) => re.test(e.message));
/** A ts `seconds` ago, as Slack writes it. */
const ago = (seconds: number) => `${Math.floor(Date.now() / 1000) - seconds}.000100`;

/** Asks for a new connection and waits for the catch-up that follows its hello to end. */
async function newConnectionCaughtUp(): Promise<void> {
  const before = status().lastCatchUpAt;
  const opened = h!.slack.connections();
  h!.slack.disconnect('refresh_requested');
  await waitFor(
    () => h!.slack.connections() > opened && connected() && status().lastCatchUpAt !== before,
    'the catch-up of the new connection',
    15_000,
  );
}

describe('chatD catch-up from the history', () => {
  it('messages sent while Keel was stopped, which Slack does not send again, are answered once each, in order', async () => {
    h = await bootChatD({ config: { chatDCatchUpInterval: 0 } });
    await waitFor(connected, 'connected');
    const replies = () => h!.slack.posted.filter((m) => m.channel === 'C0KNOWN01' && !m.deleted);
    h.slack.pushMessage('first, live', { channel: 'C0KNOWN01' });
    await waitFor(() => replies().length === 1, 'the live message answered');

    await h.kernel.stop();
    for (const t of ['missed one', 'missed two', 'missed three']) h.slack.pushMessage(t, { channel: 'C0KNOWN01', historyOnly: true });
    // This one Slack does send again on the next connection: it arrives during the catch-up and waits for it.
    const resent = h.slack.pushMessage('missed four, sent again', { channel: 'C0KNOWN01' });
    await h.restart();

    await waitFor(() => replies().length === 5 && h!.actions().every((a) => a.status === 'completed'), 'every message answered', 15_000);
    await waitFor(() => h!.slack.acked.includes(resent.envelopeId), 'the resent envelope acknowledged');
    // Answered in the order they were written: the order the model was asked about them.
    const asked: string[] = [];
    for (const call of h.model.calls) {
      const last = [...call.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
      const task = ['first, live', 'missed one', 'missed two', 'missed three', 'missed four, sent again'].find((t) => last.includes(t));
      if (task && !asked.includes(task)) asked.push(task);
    }
    expect(asked).toEqual(['first, live', 'missed one', 'missed two', 'missed three', 'missed four, sent again']);
    expect(status().caughtUp).toBe(4);

    // Another catch-up (a new connection) reads the history again and finds nothing new: still once each.
    await newConnectionCaughtUp();
    await waitFor(() => h!.actions().every((a) => a.status === 'completed'), 'settled');
    expect(tasks().sort()).toEqual(['first, live', 'missed four, sent again', 'missed one', 'missed three', 'missed two']);
    expect(replies()).toHaveLength(5);
    expect(status().caughtUp).toBe(4);
    expect(historyReads('C0KNOWN01').length).toBeGreaterThanOrEqual(2);
    expect(historyReads('C0KNOWN01')[0]!.params).toMatchObject({ inclusive: 'false', limit: '100' });
    expect(status().lastCatchUpAt).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('conversations Keel never heard from, written in while it was away (a first direct message, a channel it was invited to), are read from when it was last connected, each message once; not on a first start, nor after a routine reconnect; again after a long gap', async () => {
    h = await bootChatD({ runAgent: false, config: { chatDCatchUpInterval: 0 } });
    await waitFor(connected, 'connected');
    h.slack.pushMessage('hello', { channel: 'C0KNOWN01' });
    await waitFor(() => has('hello'), 'the live message');
    // Written long before Keel was last connected, and never delivered: not caught up.
    h.slack.pushMessage('long ago', { channel: 'C0OLD0001', ts: ago(3600), historyOnly: true });
    // A first start has no gap to look in.
    expect(h.slack.callsOf('users.conversations')).toHaveLength(0);

    await h.kernel.stop();
    h.slack.pushMessage('my first message to the bot', { channel: 'D0NEWDM01', channelType: 'im', historyOnly: true });
    h.slack.pushMessage('said where the bot was just invited', { channel: 'C0NEW0001', historyOnly: true });
    h.slack.notMember.add('C0NOTIN01');
    h.slack.pushMessage('where the bot is not a member', { channel: 'C0NOTIN01', historyOnly: true });
    await h.restart();

    await waitFor(() => has('my first message to the bot') && has('said where the bot was just invited'), 'both, from the history', 15_000);
    await waitFor(() => status().lastCatchUpAt !== undefined, 'the catch-up ended');
    expect(h.slack.callsOf('users.conversations')).toHaveLength(1);
    expect(h.slack.callsOf('users.conversations')[0]!.params).toMatchObject({
      types: 'public_channel,private_channel,mpim,im',
      exclude_archived: 'true',
    });
    expect(historyReads('C0NOTIN01')).toHaveLength(0);
    // Read from a minute before Keel was last connected, not from the start of the conversation.
    const read = historyReads('D0NEWDM01')[0]!.params;
    expect(Number(read.oldest)).toBeGreaterThan(Date.now() / 1000 - 600);
    expect(historyReads('C0OLD0001')).toHaveLength(1);
    expect(has('long ago')).toBe(false);
    expect(status().caughtUp).toBe(2);
    const said = h.logs.recent({ level: 'info', limit: 1000 }).filter((e) => /had not heard from were read/.test(e.message));
    expect(said.map((e) => e.message)).toEqual([
      'chatD: 2 message(s) said while Keel was away in conversation(s) it had not heard from were read from the history.',
    ]);

    // A routine reconnect lists nothing; the new conversations have cursors now and are read like the others.
    await newConnectionCaughtUp();
    expect(h.slack.callsOf('users.conversations')).toHaveLength(1);
    h.slack.pushMessage('and a second one, live', { channel: 'D0NEWDM01', channelType: 'im' });
    await waitFor(() => has('and a second one, live'), 'the live message');
    await new Promise((r) => setTimeout(r, 300));
    expect(tasks().filter((t) => t === 'my first message to the bot')).toHaveLength(1);

    // A connection after a long gap (no connection for ten minutes): listed again.
    h.alive(Date.now() - 600_000);
    h.slack.pushMessage('during the gap', { channel: 'D0GAP0001', channelType: 'im', historyOnly: true });
    await newConnectionCaughtUp();
    await waitFor(() => has('during the gap'), 'the message of the gap');
    expect(h.slack.callsOf('users.conversations')).toHaveLength(2);
    expect(tasks().filter((t) => t === 'said where the bot was just invited')).toHaveLength(1);
  });

  it('stopped while a conversation never heard from is still being read, the next start reads it again from when Keel was away (the mark did not move)', async () => {
    h = await bootChatD({ runAgent: false, config: { chatDCatchUpInterval: 0 } });
    await waitFor(connected, 'connected');
    h.slack.pushMessage('hello', { channel: 'C0KNOWN01' });
    await waitFor(() => has('hello'), 'the live message');
    await h.kernel.stop();
    // Away for ten minutes.
    h.alive(Date.now() - 600_000);
    const away = h.alive();
    h.slack.pushMessage('said while Keel was away', { channel: 'D0NEWDM07', channelType: 'im', ts: ago(300), historyOnly: true });
    // Its history read never answers: Keel is stopped in the middle of it.
    let begun = false;
    h.slack.onCall = (call) => {
      if (call.method !== 'conversations.history' || call.params.channel !== 'D0NEWDM07') return undefined;
      begun = true;
      return 'hold';
    };
    await h.restart();
    await waitFor(() => begun, 'the read begun');
    await h.kernel.stop();
    expect(h!.alive()).toBe(away);
    expect(has('said while Keel was away')).toBe(false);

    h.slack.onCall = undefined;
    await h.restart();
    await waitFor(() => has('said while Keel was away'), 'read at the next start', 15_000);
    await waitFor(() => h!.alive() > away, 'the mark moved once it was read');
  });

  it('in a conversation Keel never heard from, a message Slack sends again right after the hello waits for the one before it, read from the history', async () => {
    h = await bootChatD({ runAgent: false, config: { chatDCatchUpInterval: 0 } });
    await waitFor(connected, 'connected');
    h.slack.pushMessage('hello', { channel: 'C0KNOWN01' });
    await waitFor(() => has('hello'), 'the live message');
    await h.kernel.stop();
    h.slack.pushMessage('first, only in the history', { channel: 'D0NEWDM03', channelType: 'im', historyOnly: true });
    const resent = h.slack.pushMessage('second, sent again', { channel: 'D0NEWDM03', channelType: 'im' });
    await h.restart();
    await waitFor(() => has('first, only in the history') && has('second, sent again'), 'both', 15_000);
    await waitFor(() => h!.slack.acked.includes(resent.envelopeId), 'the resent envelope acknowledged');
    const order = h.actions().map((a) => a.task);
    expect(order.indexOf('first, only in the history')).toBeLessThan(order.indexOf('second, sent again'));
    expect(order.filter((t) => t === 'second, sent again')).toHaveLength(1);
  });

  it('without the scopes to list direct messages and private channels, the public channels Keel never heard from are still caught up, and the missing scopes are named once', async () => {
    h = await bootChatD({ runAgent: false, config: { chatDCatchUpInterval: 0 } });
    await waitFor(connected, 'connected');
    h.slack.pushMessage('hello', { channel: 'C0KNOWN01' });
    await waitFor(() => has('hello'), 'the live message');
    await h.kernel.stop();
    for (const scope of ['groups:read', 'mpim:read', 'im:read']) h.slack.missingScopes.add(scope);
    h.slack.pushMessage('in a public channel', { channel: 'C0NEW0002', historyOnly: true });
    h.slack.pushMessage('in a direct message', { channel: 'D0NEWDM02', channelType: 'im', historyOnly: true });
    await h.restart();
    await waitFor(() => has('in a public channel'), 'the public channel, from the history', 15_000);
    await waitFor(() => status().lastCatchUpAt !== undefined, 'the catch-up ended');
    expect(has('in a direct message')).toBe(false);
    expect(h.slack.callsOf('users.conversations').map((c) => c.params.types)).toEqual([
      'public_channel,private_channel,mpim,im',
      'public_channel',
    ]);
    const said = h.logs.recent({ limit: 1000 }).filter((e) => /lacks the scope/.test(e.message));
    expect(said).toHaveLength(1);
    expect(said[0]!.message).toContain('groups:read, mpim:read, im:read');
    expect(said[0]!.message).toContain('cannot find private channels, group direct messages, direct messages it had not heard from');
    expect(warnings(/could not list/)).toHaveLength(0);
  });

  it('after a new connection, a conversation whose live message waits for the catch-up is read before the others', async () => {
    h = await bootChatD({ runAgent: false, config: { chatDCatchUpInterval: 0 } });
    await waitFor(connected, 'connected');
    // Read most recently active first: C0ORDER03, C0ORDER02, C0ORDER01.
    for (const c of ['C0ORDER01', 'C0ORDER02', 'C0ORDER03']) h.slack.pushMessage(`hello ${c}`, { channel: c });
    await waitFor(() => h!.actions().length === 3, 'three actions');
    await h.kernel.stop();
    h.slack.pushMessage('missed in 3', { channel: 'C0ORDER03', historyOnly: true });
    h.slack.pushMessage('missed in 2', { channel: 'C0ORDER02', historyOnly: true });
    // Slack sends this one again right after hello: C0ORDER01 is read next (or first, when it came with the hello),
    // ahead of C0ORDER02.
    h.slack.pushMessage('sent again in 1', { channel: 'C0ORDER01' });
    await h.restart();
    await waitFor(() => has('missed in 3') && has('missed in 2') && has('sent again in 1'), 'all three');
    const reads = h.slack.callsOf('conversations.history').map((c) => String(c.params.channel));
    expect([...reads].sort()).toEqual(['C0ORDER01', 'C0ORDER02', 'C0ORDER03']);
    expect(reads.indexOf('C0ORDER01')).toBeLessThan(reads.indexOf('C0ORDER02'));
  });

  it('a deaf socket (pings, no events): a message older than a minute found only in the history becomes one action, is reported once, and the connection is rebuilt; a fresh one found there does not count', async () => {
    h = await bootChatD({ runAgent: false, config: { chatDCatchUpInterval: 1 } });
    await waitFor(connected, 'connected');
    h.slack.pushMessage('heard live', { channel: 'C0DEAF001', ts: ago(300) });
    await waitFor(() => has('heard live'), 'the live message');

    h.slack.deaf = true;
    const lost = h.slack.pushMessage('never delivered', { channel: 'C0DEAF001', ts: ago(120) });
    await waitFor(() => has('never delivered'), 'the undelivered message, from the history');
    const warning = await waitFor(() => warnings(/did not deliver/)[0], 'the warning');
    expect(warning.message).toBe(
      'chatD: Slack did not deliver 1 message(s) over the Socket Mode connection (in C0DEAF001); they were read from the history. Rebuilding the connection.',
    );
    await waitFor(() => h!.slack.callsOf('apps.connections.open').length === 2 && connected(), 'the connection rebuilt');
    expect(status().reconnects).toBe(1);
    expect(status().lastError).toMatch(/stopped delivering events/);
    // Slack sends it after all: it was recorded, so it is acknowledged and dropped.
    h.slack.deaf = false;
    h.slack.redeliver(lost.envelopeId);
    await waitFor(() => h!.slack.acked.includes(lost.envelopeId), 'the late envelope acknowledged');

    // A message younger than a minute that a sweep finds before the socket brings it: recorded, no warning.
    h.slack.deaf = true;
    const fresh = h.slack.pushMessage('fresh, found in the history first', { channel: 'C0DEAF001' });
    await waitFor(() => has('fresh, found in the history first'), 'the fresh message, from the history');
    h.slack.deaf = false;
    h.slack.redeliver(fresh.envelopeId);
    await waitFor(() => h!.slack.acked.includes(fresh.envelopeId), 'the fresh envelope acknowledged');
    const after = status().lastCatchUpAt;
    await waitFor(() => status().lastCatchUpAt !== after, 'a later sweep');

    expect(tasks().sort()).toEqual(['fresh, found in the history first', 'heard live', 'never delivered']);
    expect(status().caughtUp).toBe(2);
    expect(warnings(/did not deliver/)).toHaveLength(1);
    expect(h.slack.callsOf('apps.connections.open')).toHaveLength(2);
  });

  it('a conversation answering not_in_channel is reported once and does not stop the catch-up of another', async () => {
    h = await bootChatD({ runAgent: false, config: { chatDCatchUpInterval: 0 } });
    await waitFor(connected, 'connected');
    h.slack.pushMessage('hello from ok', { channel: 'C0OK00001' });
    await waitFor(() => has('hello from ok'), 'first action');
    // The more recently active conversation is read first: the one that fails.
    h.slack.pushMessage('hello from gone', { channel: 'C0GONE001' });
    await waitFor(() => has('hello from gone'), 'second action');

    await h.kernel.stop();
    h.slack.historyErrors.set('C0GONE001', 'not_in_channel');
    h.slack.pushMessage('missed in ok', { channel: 'C0OK00001', historyOnly: true });
    await h.restart();
    await waitFor(() => has('missed in ok'), 'the missed message of the readable conversation');
    expect(h.slack.callsOf('conversations.history').map((c) => c.params.channel)).toEqual(['C0GONE001', 'C0OK00001']);
    const warned = warnings(/C0GONE001/);
    expect(warned).toHaveLength(1);
    expect(warned[0]!.message).toMatch(/could not read the history of conversation C0GONE001 .*not_in_channel/);

    // The next catch-up tries it again, quietly.
    await newConnectionCaughtUp();
    expect(historyReads('C0GONE001')).toHaveLength(2);
    expect(warnings(/C0GONE001/)).toHaveLength(1);
    const logged = JSON.stringify(h.logs.recent({ limit: 1000 }));
    expect(logged).not.toContain(h.slack.botToken);
    expect(logged).not.toContain(h.slack.appToken);
  });

  it('small pages and rate limits: a long gap is read over two catch-ups, each message once and in order; a live message meanwhile does not move the cursor past the gap', async () => {
    h = await bootChatD({ runAgent: false, config: { chatDCatchUpInterval: 0 } });
    await waitFor(connected, 'connected');
    h.slack.pushMessage('start', { channel: 'C0PAGES01' });
    await waitFor(() => has('start'), 'first action');
    await h.kernel.stop();
    const gap = Array.from({ length: 12 }, (_, i) => `gap ${i + 1}`);
    for (const t of gap) h.slack.pushMessage(t, { channel: 'C0PAGES01', historyOnly: true });
    // Pages of 5 (Slack's limit is 15 for such apps); the 2nd page is refused twice: the catch-up gives up.
    h.slack.historyPageMax = 5;
    h.slack.failNext('conversations.history', { status: 429, retryAfter: 1 }, 2, 1);
    await h.restart();
    await waitFor(() => status().lastCatchUpAt, 'the first catch-up');
    expect(warnings(/ratelimited/)).toHaveLength(1);
    expect(gap.some(has)).toBe(false);

    // A live message in the meantime is answered, and leaves the cursor before the gap.
    h.slack.pushMessage('live meanwhile', { channel: 'C0PAGES01' });
    await waitFor(() => has('live meanwhile'), 'the live message');
    // The next catch-up goes on below the page it got: two more pages, then a refusal it never reaches.
    h.slack.failNext('conversations.history', { status: 429, retryAfter: 1 }, 2, 2);
    await newConnectionCaughtUp();
    await waitFor(() => gap.every(has), 'the whole gap');
    expect(h.slack.callsOf('conversations.history').at(-1)!.params).toMatchObject({
      latest: expect.any(String),
      cursor: expect.any(String),
    });
    const order = tasks().filter((t) => t.startsWith('gap '));
    expect(order).toEqual(gap);
    expect(tasks()).toHaveLength(14);
    expect(status().caughtUp).toBe(12);
  });

  it('a rate limit is waited out once (Retry-After); a second one in the same catch-up leaves the rest for the next', async () => {
    h = await bootChatD({ runAgent: false, config: { chatDCatchUpInterval: 0 } });
    await waitFor(connected, 'connected');
    h.slack.pushMessage('a1', { channel: 'C0RATE001' });
    h.slack.pushMessage('b1', { channel: 'C0RATE002' });
    await waitFor(() => has('a1') && has('b1'), 'two actions');

    await h.kernel.stop();
    h.slack.pushMessage('a2', { channel: 'C0RATE001', historyOnly: true });
    h.slack.pushMessage('b2', { channel: 'C0RATE002', historyOnly: true });
    h.slack.failNext('conversations.history', { status: 429, retryAfter: 1 }, 1);
    await h.restart();
    await waitFor(() => has('a2') && has('b2'), 'both read after one wait');
    expect(warnings(/ratelimited/)).toHaveLength(0);
    expect(historyReads('C0RATE002')).toHaveLength(2); // refused, then read

    h.slack.pushMessage('a3', { channel: 'C0RATE001', historyOnly: true });
    h.slack.pushMessage('b3', { channel: 'C0RATE002', historyOnly: true });
    h.slack.failNext('conversations.history', { status: 429, retryAfter: 1 }, 2);
    await newConnectionCaughtUp();
    expect(warnings(/ratelimited/)).toHaveLength(1);
    expect(warnings(/ratelimited/)[0]!.message).toMatch(/conversation C0RATE002 .*left for the next catch-up/);
    expect(has('a3') || has('b3')).toBe(false);
    await newConnectionCaughtUp();
    await waitFor(() => has('a3') && has('b3'), 'both read by the next catch-up');
    expect(h.actions()).toHaveLength(6);
  });
  it('thread replies written while Keel was stopped are answered once each, in their thread, in the order of the conversation', async () => {
    h = await bootChatD({ config: { chatDCatchUpInterval: 0 } });
    await waitFor(connected, 'connected');
    const parent = h.slack.pushMessage('start a topic', { channel: 'C0THREAD1' });
    await waitFor(() => has('start a topic'), 'the parent');
    const live = h.slack.pushMessage('in the thread, live', { channel: 'C0THREAD1', threadTs: parent.ts });
    await waitFor(() => has('in the thread, live'), 'the live thread reply');
    await waitFor(() => h!.actions().every((a) => a.status === 'completed'), 'answered');

    await h.kernel.stop();
    h.slack.pushMessage('missed in the thread, one', { channel: 'C0THREAD1', threadTs: parent.ts, historyOnly: true });
    h.slack.pushMessage('missed at the top', { channel: 'C0THREAD1', historyOnly: true });
    h.slack.pushMessage('missed in the thread, two', { channel: 'C0THREAD1', threadTs: parent.ts, historyOnly: true });
    await h.restart();

    const missed = ['missed in the thread, one', 'missed at the top', 'missed in the thread, two'];
    await waitFor(() => missed.every(has) && h!.actions().every((a) => a.status === 'completed'), 'the missed ones answered', 15_000);
    // Handled in the order they were written, thread replies between the conversation's own messages: the order the
    // model was asked about them.
    const all = ['start a topic', 'in the thread, live', ...missed];
    const asked: string[] = [];
    for (const call of h.model.calls) {
      const last = [...call.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
      const task = all.find((t) => last.includes(t));
      if (task && !asked.includes(task)) asked.push(task);
    }
    expect(asked).toEqual(all);
    const reads = h.slack.callsOf('conversations.replies');
    expect(reads[0]!.params).toMatchObject({ channel: 'C0THREAD1', ts: parent.ts, oldest: live.ts, inclusive: 'false' });
    // Each thread reply is answered in its thread; the top-level one at the top.
    const answers = h.slack.posted.filter((m) => m.channel === 'C0THREAD1' && !m.deleted);
    expect(answers.filter((m) => m.thread_ts === parent.ts)).toHaveLength(3);
    expect(answers.filter((m) => m.thread_ts === undefined)).toHaveLength(2);
    expect(status().caughtUp).toBe(3);

    // Another catch-up reads the thread after its last reply and finds nothing new.
    await newConnectionCaughtUp();
    await waitFor(() => h!.actions().every((a) => a.status === 'completed'), 'settled');
    expect(h.actions()).toHaveLength(5);
    expect(status().caughtUp).toBe(3);
    const again = h.slack.callsOf('conversations.replies').at(-1)!;
    expect(again.params.oldest).not.toBe(live.ts);
  });

  it('a thread started while Keel was stopped is found through its parent in the history and read from its start', async () => {
    h = await bootChatD({ runAgent: false, config: { chatDCatchUpInterval: 0 } });
    await waitFor(connected, 'connected');
    h.slack.pushMessage('hello', { channel: 'C0THREAD2' });
    await waitFor(() => has('hello'), 'first action');
    await h.kernel.stop();
    const parent = h.slack.pushMessage('a new topic', { channel: 'C0THREAD2', historyOnly: true });
    h.slack.pushMessage('first reply', { channel: 'C0THREAD2', threadTs: parent.ts, historyOnly: true });
    h.slack.pushMessage('second reply', { channel: 'C0THREAD2', threadTs: parent.ts, historyOnly: true });
    // A bot's thread is read too (its replies may be people's); the bot's own messages are dropped as usual.
    const bots = h.slack.pushMessage('a bot posted this', { channel: 'C0THREAD2', botId: 'B0OTHER1', historyOnly: true });
    h.slack.pushMessage('a person answers the bot', { channel: 'C0THREAD2', threadTs: bots.ts, historyOnly: true });
    await h.restart();
    await waitFor(() => has('a person answers the bot'), 'the whole gap', 15_000);
    expect(tasks()).toEqual(['hello', 'a new topic', 'first reply', 'second reply', 'a person answers the bot']);
    const reads = h.slack.callsOf('conversations.replies').map((c) => c.params);
    expect(reads).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ ts: parent.ts, oldest: parent.ts }),
        expect.objectContaining({ ts: bots.ts, oldest: bots.ts }),
      ]),
    );
    // The threads are followed from now on: a later catch-up reads after their newest reply only.
    await newConnectionCaughtUp();
    const later = h.slack.callsOf('conversations.replies').slice(reads.length);
    expect(later.find((c) => c.params.ts === parent.ts)?.params.oldest).not.toBe(parent.ts);
    expect(h.actions()).toHaveLength(5);
  });

  it('thread replies Slack refuses to read (missing_scope) are reported once, naming the scopes; the rest of the conversation is still caught up', async () => {
    h = await bootChatD({ runAgent: false, config: { chatDCatchUpInterval: 0 } });
    await waitFor(connected, 'connected');
    const parent = h.slack.pushMessage('topic', { channel: 'C0SCOPE01' });
    h.slack.pushMessage('reply, live', { channel: 'C0SCOPE01', threadTs: parent.ts });
    await waitFor(() => has('topic') && has('reply, live'), 'two actions');
    await h.kernel.stop();
    h.slack.repliesErrors.set('C0SCOPE01', 'missing_scope');
    h.slack.pushMessage('missed at the top', { channel: 'C0SCOPE01', historyOnly: true });
    await h.restart();
    await waitFor(() => has('missed at the top'), 'the top-level message');
    await waitFor(() => warnings(/thread replies of conversation C0SCOPE01/).length === 1, 'the warning');
    expect(warnings(/thread replies/)[0]!.message).toMatch(/missing_scope.*channels:history and groups:history/);
    await newConnectionCaughtUp();
    expect(h.slack.callsOf('conversations.replies').length).toBeGreaterThanOrEqual(2);
    expect(warnings(/thread replies/)).toHaveLength(1);

    // Allowed again: the thread is read from where it was, and that is said once.
    h.slack.repliesErrors.delete('C0SCOPE01');
    h.slack.pushMessage('missed in the thread', { channel: 'C0SCOPE01', threadTs: parent.ts, historyOnly: true });
    await newConnectionCaughtUp();
    await waitFor(() => has('missed in the thread'), 'the thread reply');
    expect(
      h.logs.recent({ level: 'info', limit: 1000 }).filter((e) => /threads of conversation C0SCOPE01 can be read again/.test(e.message)),
    ).toHaveLength(1);
    expect(h.actions()).toHaveLength(4);
  });

  it('a thread not heard from for 7 days is no longer read, and its cursor is forgotten', async () => {
    h = await bootChatD({ runAgent: false, config: { chatDCatchUpInterval: 0 } });
    await waitFor(connected, 'connected');
    const old = h.slack.pushMessage('an old topic', { channel: 'C0STALE01', ts: ago(9 * 24 * 3600) });
    h.slack.pushMessage('an old reply', { channel: 'C0STALE01', threadTs: old.ts, ts: ago(8 * 24 * 3600) });
    const fresh = h.slack.pushMessage('a recent topic', { channel: 'C0STALE01', ts: ago(3600) });
    h.slack.pushMessage('a recent reply', { channel: 'C0STALE01', threadTs: fresh.ts, ts: ago(60) });
    await waitFor(() => tasks().length === 4, 'four actions');
    await newConnectionCaughtUp();
    const reads = h.slack.callsOf('conversations.replies').map((c) => c.params.ts);
    expect(reads).toContain(fresh.ts);
    expect(reads).not.toContain(old.ts);
    const db = new DatabaseSync(join(h.home, 'channels', 'chatD', 'kit.db'), { readOnly: true });
    try {
      const keys = db.prepare("SELECT key FROM kv WHERE key LIKE 'thr:%' ORDER BY key").all() as Array<{ key: string }>;
      expect(keys.map((r) => r.key)).toEqual([`thr:C0STALE01:${fresh.ts}`]);
    } finally {
      db.close();
    }
  });
  it('a deaf socket is found by a thread reply too: one older than a minute, found only by reading its thread, rebuilds the connection', async () => {
    h = await bootChatD({ runAgent: false, config: { chatDCatchUpInterval: 1 } });
    await waitFor(connected, 'connected');
    const parent = h.slack.pushMessage('topic', { channel: 'C0DEAFTH1', ts: ago(600) });
    h.slack.pushMessage('reply heard live', { channel: 'C0DEAFTH1', threadTs: parent.ts, ts: ago(300) });
    await waitFor(() => has('reply heard live'), 'the live reply');
    h.slack.deaf = true;
    h.slack.pushMessage('reply never delivered', { channel: 'C0DEAFTH1', threadTs: parent.ts, ts: ago(120) });
    await waitFor(() => has('reply never delivered'), 'the undelivered reply, from its thread');
    await waitFor(() => warnings(/did not deliver 1 message/).length === 1, 'the warning');
    await waitFor(() => h!.slack.callsOf('apps.connections.open').length === 2, 'the connection rebuilt');
    expect(h.actions()).toHaveLength(3);
  });
  it('one message Slack dropped between two it delivered is found by the next sweep (read from where the previous read ended), once', async () => {
    h = await bootChatD({ runAgent: false, config: { chatDCatchUpInterval: 1 } });
    await waitFor(connected, 'connected');
    h.slack.pushMessage('one', { channel: 'C0DROP001', ts: ago(300) });
    await waitFor(() => has('one'), 'the first message');
    // A sweep reads the conversation once, so the next one reads from there.
    const before = status().lastCatchUpAt;
    await waitFor(() => status().lastCatchUpAt !== before, 'a sweep', 10_000);
    h.slack.pushMessage('dropped', { channel: 'C0DROP001', ts: ago(200), historyOnly: true });
    h.slack.pushMessage('three', { channel: 'C0DROP001', ts: ago(100) });
    await waitFor(() => has('three'), 'the third, live');
    await waitFor(() => has('dropped'), 'the dropped one, from the history', 15_000);
    await waitFor(() => warnings(/did not deliver 1 message/).length === 1, 'the warning');
    await new Promise((r) => setTimeout(r, 1500));
    expect(tasks().sort()).toEqual(['dropped', 'one', 'three']);
  });
  it('one thread reply Slack dropped between two it delivered is found by the next sweep, once', async () => {
    h = await bootChatD({ runAgent: false, config: { chatDCatchUpInterval: 1 } });
    await waitFor(connected, 'connected');
    const parent = h.slack.pushMessage('topic', { channel: 'C0DROP002', ts: ago(400) });
    h.slack.pushMessage('reply one', { channel: 'C0DROP002', threadTs: parent.ts, ts: ago(300) });
    await waitFor(() => has('reply one'), 'the first reply');
    const before = status().lastCatchUpAt;
    await waitFor(() => status().lastCatchUpAt !== before, 'a sweep', 10_000);
    h.slack.pushMessage('reply dropped', { channel: 'C0DROP002', threadTs: parent.ts, ts: ago(200), historyOnly: true });
    h.slack.pushMessage('reply three', { channel: 'C0DROP002', threadTs: parent.ts, ts: ago(100) });
    await waitFor(() => has('reply three'), 'the third reply, live');
    await waitFor(() => has('reply dropped'), 'the dropped reply, from the thread', 15_000);
    await new Promise((r) => setTimeout(r, 1500));
    expect(tasks().sort()).toEqual(['reply dropped', 'reply one', 'reply three', 'topic']);
  });
});
