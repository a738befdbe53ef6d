/**
 * chatD end to end: the real Bolt / Socket Mode client against the loopback Slack, a real kernel, the agent driven
 * by the scripted fake provider.
 */
import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers.js';
import { ADMIN, bootChatD, type ChatDHarness } from './harness.js';

let h: ChatDHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const postedTo = (h: ChatDHarness, channel: string) => h.slack.posted.filter((m) => m.channel === channel && !m.deleted);
/** The tasks of the actions so far, sorted. */
const sortedTasks = (h: ChatDHarness) =>
  h
    .actions()
    .map((a) => a.task)
    .sort();

async function ready(o: Parameters<typeof bootChatD>[0] = {}) {
  h = await bootChatD(o);
  await waitFor(() => h!.channel().status().connected, 'connected');
  return h;
}

describe('chatD inbound → action → reply', () => {
  it('answers in the same channel as mrkdwn; the envelope is acknowledged only once it is durable; status names the bot', async () => {
    await ready();
    expect(h!.channel().status()).toMatchObject({ enabled: true, connected: true, state: 'connected', botUsername: 'keel', reconnects: 0 });
    const up = h!.logs.recent({ level: 'info' }).filter((e) => e.message.startsWith('chatD: connected'));
    expect(up.map((e) => e.message)).toEqual([
      expect.stringMatching(/^chatD: connected as @keel \(Slack user U\w+\) in workspace Keel Test\.$/),
    ]);
    // At the moment Slack gets the ack, the message is already in the ingress store.
    const seenAtAck: Array<number> = [];
    h!.slack.onAck = () => {
      const db = new DatabaseSync(join(h!.home, 'channels', 'chatD', 'kit.db'), { readOnly: true });
      seenAtAck.push((db.prepare("SELECT COUNT(*) AS n FROM inbound WHERE message_id LIKE 'C0GENERAL1:%'").get() as { n: number }).n);
      db.close();
    };
    h!.model.replies.push({ text: '**Hello** there, see `x<y` and [docs](https://example.com)' });
    const { envelopeId, ts } = h!.slack.pushMessage('hi bot', { user: 'U0BOB0001' });
    const reply = await waitFor(() => postedTo(h!, 'C0GENERAL1')[0], 'the reply');
    expect(reply.text).toBe('*Hello* there, see `x&lt;y` and <https://example.com|docs>');
    expect(reply.thread_ts).toBeUndefined();
    expect(h!.slack.acked).toContain(envelopeId);
    expect(seenAtAck).toEqual([1]);
    const action = await waitFor(() => h!.actions().find((a) => a.status === 'completed'), 'completed');
    expect(action).toMatchObject({ source: 'chatD', task: 'hi bot' });
    expect(action!.metadata.replyTo).toMatchObject({ chatId: 'C0GENERAL1', messageId: ts });
    expect(action!.metadata.actor).toMatchObject({ kind: 'user', channel: 'chatD', userId: 'U0BOB0001', untrusted: true });
    expect(h!.channel().status().lastInboundAt).toBeTruthy();
    expect(h!.slack.callsOf('chat.postMessage')[0]!.token).toBe(h!.slack.botToken);
  });

  it('a message in a thread is answered in that thread', async () => {
    await ready();
    h!.model.replies.push({ text: 'in the thread' });
    h!.slack.pushMessage('follow-up', { threadTs: '1699999999.000001' });
    const reply = await waitFor(() => postedTo(h!, 'C0GENERAL1')[0], 'the reply');
    expect(reply).toMatchObject({ text: 'in the thread', thread_ts: '1699999999.000001' });
  });

  it('a long reply is split within Slack limits, in order, each part once — also through a 429 with Retry-After', async () => {
    await ready();
    const paragraphs = Array.from({ length: 40 }, (_, i) => `Paragraph ${i}: ${'lorem ipsum dolor sit amet '.repeat(12)}`);
    h!.model.replies.push({ text: paragraphs.join('\n\n') });
    h!.slack.failNext('chat.postMessage', { status: 429, retryAfter: 1 }, 1, 1);
    h!.slack.pushMessage('write a lot', { channelType: 'im', channel: 'D0LONG001' });
    const action = await waitFor(() => h!.actions().find((a) => a.status === 'completed'), 'completed', 20_000);
    const texts = postedTo(h!, 'D0LONG001').map((m) => m.text);
    expect(texts.length).toBeGreaterThan(1);
    for (const t of texts) expect(t.length).toBeLessThanOrEqual(3000);
    const joined = texts.join('\n\n');
    const order = paragraphs.map((p) => joined.indexOf(p.slice(0, 14)));
    expect(order.every((v, i) => v >= 0 && (i === 0 || v > order[i - 1]!))).toBe(true);
    expect(new Set(texts).size).toBe(texts.length);
    // The 429 was answered once and the refused part was sent again after the wait.
    const calls = h!.slack.callsOf('chat.postMessage').filter((c) => c.params.channel === 'D0LONG001');
    expect(calls.length).toBe(texts.length + 1);
    expect(h!.logs.recent({ level: 'warn' }).some((e) => /waits \d+ ms/.test(e.message))).toBe(true);
    expect(action.result).toContain('Paragraph 39');
  });

  it('auto-reply off: only mentions and direct messages become actions', async () => {
    await ready({ config: { chatDAutoReplyEnabled: false } });
    h!.slack.pushMessage('channel noise', { user: 'U0A000001' });
    h!.slack.pushMessage(`<@${h!.slack.botUserId}> summarise the thread`, { user: 'U0A000002' });
    h!.slack.pushMessage('a direct question', { user: 'U0A000003', channelType: 'im', channel: 'D0DM00001' });
    h!.slack.pushMessage('private noise', { user: 'U0A000004', channelType: 'group' });
    await waitFor(() => h!.actions().length >= 2 && h!.actions().every((a) => a.status === 'completed'), 'two actions');
    await waitFor(() => h!.slack.unacked() === 0, 'all acknowledged');
    await new Promise((r) => setTimeout(r, 300));
    expect(sortedTasks(h!)).toEqual(['a direct question', 'summarise the thread']);
  });

  it("auto-reply off: a reply in a thread the bot takes part in is answered without a new mention (a mention in the thread or its first message, or the bot's own answer above it), also after a restart; other threads and the channel stay quiet", async () => {
    await ready({ config: { chatDAutoReplyEnabled: false } });
    const bot = `<@${h!.slack.botUserId}>`;
    const tasks = () => h!.actions().map((a) => a.task);
    const settled = () => h!.actions().every((a) => a.status === 'completed' || a.status === 'failed');
    // A mention as a thread's first message: its thread is followed.
    const root = h!.slack.pushMessage(`${bot} what is new?`, { user: 'U0A000001' });
    // A thread started by someone else, where the bot is mentioned in a reply.
    const other = h!.slack.pushMessage('a thread about lunch', { user: 'U0A000002' });
    h!.slack.pushMessage(`${bot} where do we eat?`, { user: 'U0A000002', threadTs: other.ts });
    await waitFor(() => tasks().length === 2 && settled(), 'the two mentions');
    // The bot's own answer in the channel: a thread hung under it is followed too.
    const answer = postedTo(h!, 'C0GENERAL1').find((m) => !m.thread_ts)!;
    const quiet = h!.slack.pushMessage('a thread the bot is not in', { user: 'U0A000003' });

    h!.slack.pushMessage('and the weekend?', { user: 'U0A000001', threadTs: root.ts });
    h!.slack.pushMessage('pizza, then', { user: 'U0A000004', threadTs: other.ts });
    h!.slack.pushMessage('about your answer', { user: 'U0A000005', threadTs: answer.ts });
    h!.slack.pushMessage('nothing for the bot here', { user: 'U0A000003', threadTs: quiet.ts });
    h!.slack.pushMessage('channel chatter', { user: 'U0A000003' });
    await waitFor(() => tasks().length === 5 && settled(), 'the three follow-ups');
    await waitFor(() => h!.slack.unacked() === 0, 'all acknowledged');
    await new Promise((r) => setTimeout(r, 300));
    expect(tasks().sort()).toEqual(['about your answer', 'and the weekend?', 'pizza, then', 'what is new?', 'where do we eat?']);
    // Answered in their threads.
    expect(postedTo(h!, 'C0GENERAL1').filter((m) => m.thread_ts === other.ts).length).toBeGreaterThanOrEqual(2);

    // The threads where the bot was mentioned are remembered across a restart.
    await h!.restart();
    await waitFor(() => h!.channel().status().connected, 'connected again');
    h!.slack.pushMessage('one more thing', { user: 'U0A000001', threadTs: root.ts });
    await waitFor(() => tasks().includes('one more thing'), 'the follow-up after the restart');
  });

  it("a mention in a thread reply quotes the thread's first message (from Keel's own record, else conversations.replies, once); a follow-up without a mention does not", async () => {
    await ready({ config: { chatDAutoReplyEnabled: false }, runAgent: false });
    const bot = `<@${h!.slack.botUserId}>`;
    const quotedOf = (task: string) => h!.actions().find((a) => a.task === task)?.metadata.quoted;
    // Recorded by Keel (live, not addressed): read from its own ingress, no call.
    const lunch = h!.slack.pushMessage('lunch at <#C0FOOD001|food> &amp; then `ls &gt; x`?', { user: 'U0A000002' });
    h!.slack.pushMessage(`${bot} what do you think?`, { user: ADMIN, threadTs: lunch.ts });
    await waitFor(() => quotedOf('what do you think?'), 'the first quote');
    expect(quotedOf('what do you think?')).toEqual({
      userId: 'U0A000002',
      userName: 'Real user0002',
      text: 'lunch at #food & then `ls > x`?',
      at: new Date(Math.floor(Number(lunch.ts) * 1000)).toISOString(),
      trusted: false,
    });
    expect(h!.slack.callsOf('conversations.replies')).toHaveLength(0);
    // A follow-up in the thread the bot now takes part in: answered, nothing quoted again.
    h!.slack.pushMessage('and dessert?', { user: ADMIN, threadTs: lunch.ts });
    await waitFor(() => h!.actions().some((a) => a.task === 'and dessert?'), 'the follow-up');
    expect(quotedOf('and dessert?')).toBeUndefined();

    // Never recorded by Keel (only in Slack's history): one conversations.replies, kept for the next mention.
    const old = h!.slack.pushMessage('the release checklist', { user: ADMIN, channel: 'C0OLDTHRD', historyOnly: true });
    h!.slack.pushMessage(`${bot} is step 3 done?`, { user: 'U0A000002', channel: 'C0OLDTHRD', threadTs: old.ts });
    h!.slack.pushMessage(`${bot} and step 4?`, { user: 'U0A000002', channel: 'C0OLDTHRD', threadTs: old.ts });
    await waitFor(() => quotedOf('and step 4?'), 'the quotes from the history');
    expect(quotedOf('is step 3 done?')).toMatchObject({ userId: ADMIN, text: 'the release checklist', trusted: true });
    expect(quotedOf('and step 4?')).toMatchObject({ userId: ADMIN, trusted: true });
    expect(h!.slack.callsOf('conversations.replies').filter((c) => c.params.channel === 'C0OLDTHRD')).toHaveLength(1);

    // A thread under the bot's own message quotes the bot (trusted; as Slack holds it, in mrkdwn); a direct message's
    // thread needs no mention.
    await h!.channel().send('D0DIRECT1', 'Deploy *now*?');
    const mine = postedTo(h!, 'D0DIRECT1')[0]!;
    h!.slack.pushMessage('yes, go', { user: ADMIN, channelType: 'im', threadTs: mine.ts });
    await waitFor(() => quotedOf('yes, go'), 'the quote of the bot');
    expect(quotedOf('yes, go')).toMatchObject({ userId: h!.slack.botUserId, fromBot: true, text: 'Deploy _now_?', trusted: true });
  });

  it('chatDFollowThreads false: a reply in a thread the bot takes part in needs a mention again', async () => {
    await ready({ config: { chatDAutoReplyEnabled: false, chatDFollowThreads: false } });
    const root = h!.slack.pushMessage(`<@${h!.slack.botUserId}> first`, { user: 'U0A000001' });
    await waitFor(() => h!.actions().length === 1, 'the mention');
    h!.slack.pushMessage('follow-up without a mention', { user: 'U0A000001', threadTs: root.ts });
    h!.slack.pushMessage(`<@${h!.slack.botUserId}> follow-up with one`, { user: 'U0A000001', threadTs: root.ts });
    await waitFor(() => h!.actions().length === 2, 'the second mention');
    await waitFor(() => h!.slack.unacked() === 0, 'all acknowledged');
    await new Promise((r) => setTimeout(r, 300));
    expect(sortedTasks(h!)).toEqual(['first', 'follow-up with one']);
  });

  it('a mention that raises both message and app_mention (an app subscribed to both) is one action and one reply; app_mention alone is answered too', async () => {
    await ready({ config: { chatDAutoReplyEnabled: false } });
    const mention = `<@${h!.slack.botUserId}>`;
    const both = h!.slack.pushMessage(`${mention} what is the status`, { user: 'U0A000005', events: ['app_mention', 'message'] });
    await waitFor(() => both.envelopeIds.every((id) => h!.slack.acked.includes(id)), 'both envelopes acknowledged');
    await waitFor(() => h!.actions().length === 1 && h!.actions()[0]!.status === 'completed', 'one action');
    const only = h!.slack.pushMessage(`${mention} in a thread`, { user: 'U0A000006', threadTs: both.ts, events: ['app_mention'] });
    await waitFor(() => h!.actions().length === 2 && h!.actions().every((a) => a.status === 'completed'), 'the second');
    await waitFor(() => h!.slack.unacked() === 0, 'all acknowledged');
    await new Promise((r) => setTimeout(r, 300));
    expect(sortedTasks(h!)).toEqual(['in a thread', 'what is the status']);
    const replies = postedTo(h!, 'C0GENERAL1');
    expect(replies).toHaveLength(2);
    // The app_mention in a thread is answered in that thread.
    expect(replies.filter((m) => m.thread_ts === both.ts)).toHaveLength(1);
    expect(only.envelopeIds).toHaveLength(1);
  });

  it('auto-reply on: every user message becomes an action (channels, private channels, group DMs, DMs)', async () => {
    await ready({ config: { chatDAutoReplyEnabled: true } });
    h!.slack.pushMessage('one', { channelType: 'channel' });
    h!.slack.pushMessage('two', { channelType: 'group' });
    h!.slack.pushMessage('three', { channelType: 'mpim', channel: 'G0MPIM001' });
    h!.slack.pushMessage('four', { channelType: 'im' });
    await waitFor(() => h!.actions().length === 4, 'four actions');
  });

  it("the agent reads what the person typed: Slack's escapes and control sequences undone, lines and indentation kept", async () => {
    await ready({ config: { chatDAutoReplyEnabled: true } });
    // As Slack sends it: every &, < and > escaped (also in code), links and mentions as <…>.
    h!.slack.pushMessage(
      'run this &amp; tell <@U0BOB|bob>:\n```\nif x &lt; 2:\n    print(x &gt; 1)\n```\nsee <https://example.com/?a=1&amp;b=2|the docs>',
    );
    await waitFor(() => h!.actions().length === 1, 'one action');
    expect(h!.actions()[0]!.task).toBe(
      'run this & tell @bob:\n```\nif x < 2:\n    print(x > 1)\n```\nsee the docs (https://example.com/?a=1&b=2)',
    );
  });

  it('people are named for the agent (users.info, once per person): the sender, the mentions; an unknown id stays an id; without users:read one line says so', async () => {
    await ready({ config: { chatDAutoReplyEnabled: false }, runAgent: false });
    h!.slack.displayNames.set('U0ANN0001', 'Ann B.');
    h!.slack.unknownUsers.add('U0GONE001');
    const bot = `<@${h!.slack.botUserId}>`;
    h!.slack.pushMessage(`${bot} ask <@U0CARL001> and <@U0GONE001>`, { user: 'U0ANN0001' });
    h!.slack.pushMessage(`${bot} me too`, { user: 'U0ANN0001' });
    h!.slack.pushMessage('chatter about <@U0DAVE001>', { user: 'U0ERIC001' });
    await waitFor(() => h!.actions().length === 2, 'two actions');
    const first = h!.actions().find((a) => a.task.startsWith('ask'))!;
    expect(first.task).toBe('ask @Real userl001 and @U0GONE001');
    expect(first.metadata.inbound).toMatchObject({ userId: 'U0ANN0001', userName: 'Ann B.' });
    // Each person once (kept); nobody is looked up for a message that becomes no action.
    await new Promise((r) => setTimeout(r, 300));
    const asked = h!.slack.callsOf('users.info').map((c) => c.params.user);
    expect(asked.sort()).toEqual(['U0ANN0001', 'U0CARL001', 'U0GONE001']);

    await h!.close();
    h = undefined;
    await ready({ config: { chatDAutoReplyEnabled: true }, runAgent: false });
    h!.slack.missingScopes.add('users:read');
    h!.slack.pushMessage('hello <@U0CARL001>', { user: 'U0ANN0001' });
    h!.slack.pushMessage('again', { user: 'U0ANN0001' });
    await waitFor(() => h!.actions().length === 2, 'two actions without names');
    expect(h!.actions().map((a) => a.task)).toContain('hello @U0CARL001');
    const lines = h!.logs.recent({ level: 'info' }).filter((e) => e.message.includes('users:read'));
    expect(lines).toHaveLength(1);
    // The first message's two people were asked at once; nobody after the refusal.
    expect(h!.slack.callsOf('users.info')).toHaveLength(2);
  });

  it('its own messages, other bots’ messages and a message_changed that is no edit are acknowledged and ignored; a redelivered event is one action', async () => {
    await ready();
    h!.slack.pushMessage('I am the bot', { user: h!.slack.botUserId });
    h!.slack.pushMessage('from another bot', { botId: 'B0OTHER01' });
    h!.slack.pushMessage('own reply echo', { botId: 'BKEEL1', user: h!.slack.botUserId });
    h!.slack.pushMessage('edited', { subtype: 'message_changed' });
    h!.slack.pushMessage('a person');
    await waitFor(() => h!.slack.unacked() === 0 && h!.actions().length === 1, 'acknowledged, one action');
    // Slack delivers the same event again on a new connection when it thinks the ack was lost.
    const { envelopeId } = h!.slack.pushMessage('sent twice');
    await waitFor(() => h!.slack.acked.includes(envelopeId), 'acked');
    await waitFor(() => h!.actions().length === 2, 'two actions');
    h!.slack.redeliver(envelopeId);
    await waitFor(() => h!.slack.acked.filter((id) => id === envelopeId).length === 2, 'the redelivery acknowledged too');
    await new Promise((r) => setTimeout(r, 500));
    expect(sortedTasks(h!)).toEqual(['a person', 'sent twice']);
  });

  it('admins are trusted, others are untrusted', async () => {
    await ready();
    h!.slack.pushMessage('from admin', { user: ADMIN });
    h!.slack.pushMessage('from stranger', { user: 'U0STRANGE' });
    await waitFor(() => h!.actions().length === 2, 'two actions');
    const by = (t: string) => h!.actions().find((a) => a.task === t)!.metadata.actor;
    expect(by('from admin')).toEqual({ kind: 'user', channel: 'chatD', userId: ADMIN });
    expect(by('from stranger')).toMatchObject({ userId: 'U0STRANGE', untrusted: true });
  });

  it('a failed action tells the user once, briefly, in the thread, without a stack trace', async () => {
    await ready({ config: { maxStepsPerAction: 1 } });
    h!.model.defaultReply = { error: { message: 'model exploded\n    at run (/srv/keel/x.js:1:2)', status: 400 } };
    h!.slack.pushMessage('do it', { channel: 'C0FAIL001', threadTs: '1699999999.000777' });
    const msg = await waitFor(() => postedTo(h!, 'C0FAIL001')[0], 'failure notice', 15_000);
    expect(msg.text).toMatch(/^Sorry, that did not work/);
    expect(msg.text).not.toMatch(/\bat run\b|\/srv\//);
    expect(msg.thread_ts).toBe('1699999999.000777');
    await new Promise((r) => setTimeout(r, 500));
    expect(postedTo(h!, 'C0FAIL001')).toHaveLength(1);
  });
});
