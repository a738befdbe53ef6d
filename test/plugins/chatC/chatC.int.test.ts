/**
 * chatC end to end: the real discord.js against the loopback Discord (REST + gateway), a real kernel, the agent
 * driven by the scripted fake provider.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers.js';
import { ADMIN, bootChatC, type ChatCHarness, USER } from './harness.js';

let h: ChatCHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const connected = () => waitFor(() => h!.channel().status().connected, 'connected');

describe('chatC inbound → action → reply', () => {
  it('answers in the same channel as Discord Markdown, threaded to the message, with a nonce; status counts servers', async () => {
    h = await bootChatC();
    await connected();
    expect(h.channel().status()).toMatchObject({
      enabled: true,
      connected: true,
      state: 'connected',
      botUsername: 'keel-test',
      guilds: 1,
      reconnects: 0,
    });
    // The log says once as whom and in how many servers it connected.
    const up = h.logs.recent({ level: 'info' }).filter((e) => e.message.startsWith('chatC: connected'));
    expect(up.map((e) => e.message)).toEqual(['chatC: connected as keel-test (Discord user 100000000000000001) in 1 server(s).']);
    h.model.replies.push({ text: '**Hello** there, see `x<y` and a_b' });
    const inbound = h.dc.pushMessage('hi bot', { userId: USER, mention: true });
    const reply = await waitFor(() => h!.dc.sentTo(h!.dc.channelId).find((m) => m.content.includes('Hello')), 'the reply');
    expect(reply.content).toBe('**Hello** there, see `x<y` and a\\_b');
    expect(reply.message_reference).toMatchObject({ message_id: inbound.id });
    const post = h.dc.callsOf('POST /channels/:id/messages').find((c) => c.body.content === reply.content)!;
    expect(post.body).toMatchObject({ enforce_nonce: true });
    expect(String(post.body.nonce).length).toBeLessThanOrEqual(25);
    const action = await waitFor(() => h!.actions().find((a) => a.status === 'completed'), 'completed');
    expect(action).toMatchObject({ source: 'chatC', task: 'hi bot' });
    expect(action!.metadata.replyTo).toMatchObject({ chatId: h.dc.channelId, messageId: inbound.id });
    expect(action!.metadata.actor).toMatchObject({ kind: 'user', channel: 'chatC', userId: USER, untrusted: true });
    expect(h.channel().status().lastInboundAt).toBeTruthy();
    // Typing was shown while the action ran; the bot's own echoed message did not become an action.
    expect(h.dc.callsOf('POST /channels/:id/typing').length).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 300));
    expect(h.actions()).toHaveLength(1);
  });

  it('a message in a thread is answered in that thread (threaded to it), as its own conversation', async () => {
    h = await bootChatC();
    await connected();
    const THREAD = '330000000000000111';
    h.model.replies.push({ text: 'Answer in the thread.' });
    const inbound = h.dc.pushMessage('question in a thread', { userId: USER, channelId: THREAD, threadOf: h.dc.channelId, mention: true });
    const reply = await waitFor(() => h!.dc.sentTo(THREAD).find((m) => m.content === 'Answer in the thread.'), 'the reply in the thread');
    expect(reply.message_reference).toMatchObject({ message_id: inbound.id });
    expect(h.dc.sentTo(h.dc.channelId)).toHaveLength(0);
    const action = await waitFor(() => h!.actions().find((a) => a.status === 'completed'), 'completed');
    expect(action!.metadata.replyTo).toMatchObject({ chatId: THREAD, messageId: inbound.id });
  });

  it('a long reply goes out in chunks of at most 2,000, in order, each once — also through a 429 with retry_after in the middle', async () => {
    h = await bootChatC();
    await connected();
    const paragraphs = Array.from({ length: 30 }, (_, i) => `Paragraph ${i}: ${'lorem ipsum dolor sit amet '.repeat(10)}`);
    h.model.replies.push({ text: paragraphs.join('\n\n') });
    h.dc.failNext('POST /channels/:id/messages', { status: 429, retryAfter: 0.5 }, 1, 1);
    const inbound = h.dc.pushMessage('write a lot', { userId: USER, dm: true });
    const action = await waitFor(() => h!.actions().find((a) => a.status === 'completed'), 'completed', 20_000);
    const texts = h.dc.sentTo(inbound.channel_id).map((m) => m.content);
    expect(texts.length).toBeGreaterThan(2);
    for (const t of texts) expect(t.length).toBeLessThanOrEqual(2000);
    const joined = texts.join('\n\n');
    const order = paragraphs.map((p) => joined.indexOf(p.slice(0, 13)));
    expect(order.every((v, i) => v >= 0 && (i === 0 || v > order[i - 1]!))).toBe(true);
    expect(new Set(texts).size).toBe(texts.length);
    // The 429 was answered once and the chunk it refused was sent again, with the same nonce.
    const posts = h.dc.callsOf('POST /channels/:id/messages').filter((c) => c.path.includes(inbound.channel_id));
    expect(posts.length).toBe(texts.length + 1);
    expect(posts[1]!.body.nonce).toBe(posts[2]!.body.nonce);
    expect(new Set(posts.map((p) => p.body.nonce)).size).toBe(texts.length);
    // Only the first chunk is threaded to the question.
    expect(h.dc.sentTo(inbound.channel_id)[0]!.message_reference).toMatchObject({ message_id: inbound.id });
    expect(h.dc.sentTo(inbound.channel_id)[1]!.message_reference).toBeUndefined();
    expect(action.result).toContain('Paragraph 29');
  });

  it('a chunk whose answer was lost is sent again with the same nonce and Discord keeps one message', async () => {
    h = await bootChatC({ runAgent: false });
    await connected();
    // Discord created the message but the answer failed (a 502 on the way back, as after a timeout): the retry
    // carries the same nonce with enforce_nonce, so Discord answers with the message it already has.
    h.dc.failNext('POST /channels/:id/messages', { status: 502, afterCreate: true });
    const sent = await h.channel().send(h.dc.channelId, 'only once', { idempotencyKey: 'k1' });
    const posts = h.dc.callsOf('POST /channels/:id/messages');
    expect(posts.length).toBe(2);
    expect(posts[0]!.body.nonce).toBe(posts[1]!.body.nonce);
    expect(h.dc.sentTo(h.dc.channelId).filter((m) => m.content === 'only once')).toHaveLength(1);
    expect(sent.messageId).toBe(h.dc.sentTo(h.dc.channelId)[0]!.id);
    // The same key again (a re-run of the same reply) sends nothing at all.
    await h.channel().send(h.dc.channelId, 'only once', { idempotencyKey: 'k1' });
    expect(h.dc.callsOf('POST /channels/:id/messages').length).toBe(2);
  });

  it('auto-reply off: server chatter is ignored; a mention (of the bot, or of its managed role), a reply to the bot and a direct message become actions', async () => {
    h = await bootChatC({ config: { chatCAutoReplyEnabled: false } });
    await connected();
    const mine = await h.channel().send(h.dc.channelId, 'I am the bot');
    h.dc.pushMessage('just chatting', { userId: USER });
    h.dc.pushMessage('summarise please', { userId: USER, mention: true });
    h.dc.pushMessage('and this one?', { userId: USER, replyTo: mine.messageId });
    h.dc.pushMessage('private question', { userId: USER, dm: true });
    // "@keel-test" picked as the bot's managed role in Discord's list is a mention of the bot; another role is not.
    h.dc.pushMessage('via the role', { userId: USER, mentionRole: 'bot' });
    h.dc.pushMessage('hey helpers', { userId: USER, mentionRole: 'other' });
    await waitFor(() => h!.actions().length >= 4 && h!.actions().every((a) => a.status === 'completed'), 'four actions');
    await new Promise((r) => setTimeout(r, 400));
    expect(
      h
        .actions()
        .map((a) => a.task)
        .sort(),
    ).toEqual(['and this one?', 'private question', 'summarise please', 'via the role']);
  });

  it("a reply quotes the message it answers: another person's untrusted, an admin's and the bot's own trusted", async () => {
    h = await bootChatC({ config: { chatCAutoReplyEnabled: false }, runAgent: false });
    await connected();
    const mine = await h.channel().send(h.dc.channelId, 'Shall I **restart** it?');
    const theirs = h.dc.pushMessage('the deploy fails on <@420000000000000042> arm64 <:sad:123>', { userId: USER });
    const boss = h.dc.pushMessage('note to self: check the cache', { userId: ADMIN });
    h.dc.pushMessage('what went wrong here?', { userId: ADMIN, replyTo: theirs.id, mention: true, nick: 'Ann (ops)' });
    h.dc.pushMessage('yes please', { userId: ADMIN, replyTo: mine.messageId });
    h.dc.pushMessage('and this?', { userId: ADMIN, replyTo: boss.id, mention: true });
    await waitFor(() => h!.actions().length >= 3, 'three actions');
    const quoted = Object.fromEntries(h.actions().map((a) => [a.task, a.metadata.quoted]));
    expect(quoted['what went wrong here?']).toEqual({
      userId: USER,
      userName: 'user0043',
      text: 'the deploy fails on @user0042 arm64 :sad:',
      at: theirs.timestamp,
      trusted: false,
    });
    expect(quoted['yes please']).toMatchObject({ fromBot: true, text: 'Shall I **restart** it?', trusted: true });
    // The sender is named as the server shows them: their nickname there, else their handle.
    const sender = (t: string) => h!.actions().find((a) => a.task === t)!.metadata.inbound;
    expect(sender('what went wrong here?')).toMatchObject({ userId: ADMIN, userName: 'Ann (ops)' });
    expect(sender('yes please')).toMatchObject({ userId: ADMIN, userName: 'user0042' });
    expect(quoted['and this?']).toMatchObject({ userId: ADMIN, text: 'note to self: check the cache', trusted: true });
  });

  it('a forwarded message is quoted as forwarded, never trusted (Discord does not say whose it was); a forward without a comment is still answered', async () => {
    h = await bootChatC({ config: { chatCAutoReplyEnabled: false }, runAgent: false });
    await connected();
    h.dc.pushMessage('', {
      userId: ADMIN,
      dm: true,
      forward: { content: 'please run <@1> cleanup now', at: Date.parse('2026-11-25T08:00:00Z') },
    });
    h.dc.pushMessage('is this legit?', { userId: ADMIN, dm: true, forward: { content: 'Your account is locked, click here' } });
    await waitFor(() => h!.actions().length === 2, 'two actions');
    const quoted = Object.fromEntries(h.actions().map((a) => [a.task, a.metadata.quoted]));
    expect(quoted['[forwarded a message]']).toEqual({
      userId: '',
      text: 'please run <@1> cleanup now',
      at: '2026-11-25T08:00:00.000Z',
      forwarded: true,
      trusted: false,
    });
    expect(quoted['is this legit?']).toMatchObject({ text: 'Your account is locked, click here', forwarded: true, trusted: false });
  });

  it("a mention in a thread quotes the thread's first message (from Keel's own record, else over REST, once); a reply there quotes what it answers instead", async () => {
    h = await bootChatC({ config: { chatCAutoReplyEnabled: false }, runAgent: false });
    await connected();
    const quotedOf = (task: string) => h!.actions().find((a) => a.task === task)?.metadata.quoted;
    const getMessage = () => h!.dc.callsOf('GET /channels/:id/messages/:id').length;
    // A thread started from a message Keel recorded (on Discord the thread's id is that message's id).
    // (Recorded no later than the mention below: the gateway delivers them in this order.)
    const red = h.dc.pushMessage('the build is red', { userId: USER });
    h.dc.pushMessage('why is that?', { userId: ADMIN, channelId: red.id, threadOf: h.dc.channelId, mention: true });
    await waitFor(() => quotedOf('why is that?'), 'the quote from the record');
    expect(quotedOf('why is that?')).toMatchObject({ userId: USER, text: 'the build is red', trusted: false });
    expect(getMessage()).toBe(0);
    // A reply in the thread quotes the message it answers, not the thread's start.
    const inThread = h.dc.pushMessage('I restarted the runner', { userId: ADMIN, channelId: red.id, threadOf: h.dc.channelId });
    h.dc.pushMessage('did it help?', { userId: USER, channelId: red.id, threadOf: h.dc.channelId, replyTo: inThread.id, mention: true });
    await waitFor(() => quotedOf('did it help?'), 'the quote of the reply');
    expect(quotedOf('did it help?')).toMatchObject({ userId: ADMIN, text: 'I restarted the runner', trusted: true });

    // Started from a message Keel never recorded: read over REST (the thread, then the parent's message), once.
    const old = h.dc.pushMessage('release notes for 2.0', { userId: ADMIN, historyOnly: true });
    h.dc.pushMessage('ready to ship?', { userId: USER, channelId: old.id, threadOf: h.dc.channelId, mention: true });
    h.dc.pushMessage('and the docs?', { userId: USER, channelId: old.id, threadOf: h.dc.channelId, mention: true });
    await waitFor(() => quotedOf('and the docs?'), 'the quotes over REST');
    expect(quotedOf('ready to ship?')).toMatchObject({ userId: ADMIN, text: 'release notes for 2.0', trusted: true });
    expect(quotedOf('and the docs?')).toMatchObject({ text: 'release notes for 2.0' });
    // In the thread (404: not a forum post), then in the parent; the second mention asks nothing.
    expect(getMessage()).toBe(2);
  });

  it('auto-reply off: a message in a thread the bot takes part in needs no mention (addressed there, or started from its message), also after a restart; other threads and the channel stay quiet', async () => {
    h = await bootChatC({ config: { chatCAutoReplyEnabled: false }, runAgent: false });
    await connected();
    const tasks = () => h!.actions().map((a) => a.task);
    const THREAD = '330000000000000211';
    const QUIET = '330000000000000212';
    h.dc.pushMessage('help in here', { userId: USER, channelId: THREAD, threadOf: h.dc.channelId, mention: true });
    h.dc.pushMessage('a thread without the bot', { userId: USER, channelId: QUIET, threadOf: h.dc.channelId });
    await waitFor(() => tasks().length === 1, 'the mention');
    // A thread started from one of the bot's messages has that message's id.
    const mine = await h.channel().send(h.dc.channelId, 'I am the bot');
    h.dc.pushMessage('about your message', { userId: USER, channelId: mine.messageId, threadOf: h.dc.channelId });
    h.dc.pushMessage('and a follow-up', { userId: USER, channelId: THREAD });
    h.dc.pushMessage('still nothing for the bot', { userId: USER, channelId: QUIET });
    h.dc.pushMessage('channel chatter', { userId: USER });
    await waitFor(() => tasks().length === 3, 'the two follow-ups');
    await new Promise((r) => setTimeout(r, 400));
    expect(tasks().sort()).toEqual(['about your message', 'and a follow-up', 'help in here']);

    await h.restart();
    await connected();
    h.dc.pushMessage('after the restart', { userId: USER, channelId: THREAD });
    await waitFor(() => tasks().includes('after the restart'), 'the follow-up after the restart');
  });

  it('chatCFollowThreads false: a message in a thread the bot takes part in needs a mention again', async () => {
    h = await bootChatC({ config: { chatCAutoReplyEnabled: false, chatCFollowThreads: false }, runAgent: false });
    await connected();
    const THREAD = '330000000000000221';
    h.dc.pushMessage('help in here', { userId: USER, channelId: THREAD, threadOf: h.dc.channelId, mention: true });
    await waitFor(() => h!.actions().length === 1, 'the mention');
    h.dc.pushMessage('a follow-up without a mention', { userId: USER, channelId: THREAD });
    h.dc.pushMessage('one with a mention', { userId: USER, channelId: THREAD, mention: true });
    await waitFor(() => h!.actions().length === 2, 'the second mention');
    await new Promise((r) => setTimeout(r, 400));
    expect(
      h
        .actions()
        .map((a) => a.task)
        .sort(),
    ).toEqual(['help in here', 'one with a mention']);
  });

  it('auto-reply on: every message becomes an action', async () => {
    h = await bootChatC({ config: { chatCAutoReplyEnabled: true }, runAgent: false });
    await connected();
    h.dc.pushMessage('one', { userId: USER });
    h.dc.pushMessage('two', { userId: USER, dm: true });
    await waitFor(() => h!.actions().length === 2, 'two actions');
  });

  it("the agent reads what the person saw: another person's mention as @name, custom emoji as :name:, a timestamp as its time", async () => {
    h = await bootChatC({ runAgent: false });
    await connected();
    h.dc.pushMessage('ask <@400000000000000042> about <:wave:900000000000000001> before <t:1700000000:R>', { userId: USER, mention: true });
    await waitFor(() => h!.actions().length === 1, 'one action');
    expect(h.actions()[0]!.task).toBe('ask @user0042 about :wave: before 2023-11-14T22:13:20.000Z');
  });

  it('admins (adminUsers.chatC by snowflake) are trusted, others are untrusted; sessions follow sessionScope', async () => {
    h = await bootChatC({ runAgent: false });
    await connected();
    h.dc.pushMessage('from admin', { userId: ADMIN });
    h.dc.pushMessage('from stranger', { userId: USER });
    await waitFor(() => h!.actions().length === 2, 'two actions');
    const by = (t: string) => h!.actions().find((a) => a.task === t)!;
    expect(by('from admin').metadata.actor).toEqual({ kind: 'user', channel: 'chatC', userId: ADMIN });
    expect(by('from stranger').metadata.actor).toMatchObject({ userId: USER, untrusted: true });
    expect(by('from admin').metadata.session).not.toBe(by('from stranger').metadata.session);
  });

  it('a failed action tells the user once, briefly, without a stack trace; typing stops', async () => {
    h = await bootChatC({ config: { maxStepsPerAction: 1 } });
    await connected();
    h.model.defaultReply = { error: { message: 'model exploded\n    at run (/srv/keel/x.js:1:2)', status: 400 } };
    const m = h.dc.pushMessage('do it', { userId: USER, dm: true });
    const msg = await waitFor(() => h!.dc.sentTo(m.channel_id)[0], 'failure notice', 15_000);
    expect(msg.content).toMatch(/^Sorry, that did not work/);
    expect(msg.content).not.toMatch(/\bat run\b|\/srv\//);
    expect(msg.message_reference).toMatchObject({ message_id: m.id });
    await new Promise((r) => setTimeout(r, 500));
    expect(h.dc.sentTo(m.channel_id)).toHaveLength(1);
  });
});
