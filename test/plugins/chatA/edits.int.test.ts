/**
 * chatA message edits (`edited_message`) reaching the channel kit's `edited`: an edit of a waiting message takes its
 * place, one adding the bot's mention in a group becomes an action, each edit is handled once however often Telegram
 * delivers it, an edit over 15 minutes after the message changes nothing, and an edit while the action runs is
 * handed to it through `agent:inbox`. The real kernel and grammy against the loopback Bot API.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers.js';
import { completed, heldAnswer } from '../channel-harness.js';
import { bootChatA, type ChatAHarness } from './harness.js';

let h: ChatAHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const now = () => Math.floor(Date.now() / 1000);

/** Inbound keys the channel reported as ignored, with the reason (`<key>:<reason>`). */
function ignoredLog(h: ChatAHarness): string[] {
  const ignored: string[] = [];
  h.kernel.hooks.messageIgnored.tap('test', (e: { messageId: string; reason: string }) => void ignored.push(`${e.messageId}:${e.reason}`));
  return ignored;
}

describe('chatA message edits', () => {
  it('asks Telegram for edits; an edit of a waiting message amends its action in place, the answer still replying to that message', async () => {
    h = await bootChatA({ runAgent: false });
    await waitFor(() => h!.channel().status().connected, 'connected');
    // "connected" can be reported a moment before the first poll reaches the fake: wait for that poll.
    const firstPoll = await waitFor(() => h!.tg.callsOf('getUpdates')[0], 'the first getUpdates');
    expect(firstPoll.params.allowed_updates).toContain('edited_message');

    const { message_id } = h.tg.pushText('deploy to stagng', { userId: 555 });
    const first = await waitFor(() => h!.actions()[0], 'the first action');
    expect(first).toMatchObject({ task: 'deploy to stagng', status: 'pending' });

    const { edit_date } = h.tg.pushEdit(message_id, 'deploy to staging');
    const key = `555:${message_id}:edit:${edit_date}`;
    expect(await waitFor(() => h!.outcome(key), 'the edit handled')).toBe(`amended:${first.id}`);
    const actions = h.actions();
    expect(actions).toHaveLength(1);
    const [current] = actions;
    expect(current).toMatchObject({ id: first.id, task: 'deploy to staging', status: 'pending' });
    expect(current!.metadata.edit).toEqual({ of: `555:${message_id}`, at: String(edit_date) });
    expect(current!.metadata.replyTo).toMatchObject({ chatId: '555', messageId: String(message_id) });
    expect(current!.metadata.inbound).toMatchObject({ messageId: key });
  });

  it('a group message ignored for want of a mention becomes an action when edited to mention the bot', async () => {
    h = await bootChatA({ config: { chatAAutoReplyEnabled: false }, runAgent: false });
    await waitFor(() => h!.channel().status().connected, 'connected');
    const { message_id } = h.tg.pushText('what time is it', { userId: 12, chatId: -100, group: true });
    expect(await waitFor(() => h!.outcome(`-100:${message_id}`), 'the message handled')).toBe('ignored:auto-reply-off');

    // Edited, still without the mention: still nothing to do.
    const e1 = h.tg.pushEdit(message_id, 'what time is it now', { editDate: now() });
    expect(await waitFor(() => h!.outcome(`-100:${message_id}:edit:${e1.edit_date}`), 'the first edit')).toBe('ignored:auto-reply-off');
    expect(h.actions()).toEqual([]);

    const e2 = h.tg.pushEdit(message_id, '@keel_test_bot what time is it now', { editDate: e1.edit_date + 1 });
    expect(await waitFor(() => h!.outcome(`-100:${message_id}:edit:${e2.edit_date}`), 'the second edit')).toBe('queued');
    const [action, ...more] = h.actions();
    expect(more).toEqual([]);
    expect(action).toMatchObject({ task: '@keel_test_bot what time is it now', status: 'pending' });
    expect(action!.metadata.edit).toEqual({ of: `-100:${message_id}`, at: String(e2.edit_date) });
    expect(action!.metadata.replyTo).toMatchObject({ chatId: '-100', messageId: String(message_id) });
  });

  it('the same edit delivered twice is handled once', async () => {
    h = await bootChatA({ runAgent: false });
    await waitFor(() => h!.channel().status().connected, 'connected');
    const ignored = ignoredLog(h);
    const { message_id } = h.tg.pushText('book a room', { userId: 556 });
    const first = await waitFor(() => h!.actions()[0], 'the first action');

    const editDate = now();
    h.tg.pushEdit(message_id, 'book a room for two', { editDate });
    const key = `556:${message_id}:edit:${editDate}`;
    expect(await waitFor(() => h!.outcome(key), 'the edit handled')).toBe(`amended:${first.id}`);
    const edited = h.actions();
    expect(edited).toHaveLength(1);

    // Telegram delivers that edit again: the ingress knows its key, the kit never sees it.
    const again = h.tg.pushEdit(message_id, 'book a room for two', { editDate });
    await waitFor(() => ignored.includes(`${key}:duplicate`), 'the redelivery recognised');
    await waitFor(() => h!.tg.ackedOffset() > again.update_id, 'the redelivery acknowledged');
    expect(h!.recorded().filter((k) => k === key).length).toBe(1);
    expect(h.actions()).toEqual(edited);
  });

  it('changes nothing for an edit over 15 minutes after the message, nor for a bot, nor for a channel post', async () => {
    h = await bootChatA({ runAgent: false });
    await waitFor(() => h!.channel().status().connected, 'connected');
    const { message_id } = h.tg.pushText('first version', { userId: 557, date: now() - 16 * 60 });
    const first = await waitFor(() => h!.actions()[0], 'the action');

    const { edit_date } = h.tg.pushEdit(message_id, 'second version');
    expect(await waitFor(() => h!.outcome(`557:${message_id}:edit:${edit_date}`), 'the edit handled')).toBe('ignored:edit-too-old');
    expect(h.actions()).toEqual([first]);

    // Another bot's message and its edit (a group whose bots see each other), and an edited channel post.
    const chat = { id: -200, type: 'group' };
    const bot = { id: 9000, is_bot: true, first_name: 'OtherBot', username: 'other_bot' };
    h.tg.push({ message: { message_id: 70, date: now(), chat, from: bot, text: 'beep @keel_test_bot' } });
    const e = h.tg.pushEdit(70, 'beep beep @keel_test_bot');
    expect(await waitFor(() => h!.outcome(`-200:70:edit:${e.edit_date}`), 'the bot edit handled')).toBe('skipped');
    const post = h.tg.push({
      edited_channel_post: { message_id: 5, date: now(), edit_date: now(), chat: { id: -300, type: 'channel' }, text: 'news' },
    });
    await waitFor(() => h!.tg.ackedOffset() > post.update_id, 'the post acknowledged');
    expect(h!.recorded().filter((k) => k === `-300:5`).length).toBe(0);
    expect(h.actions()).toEqual([first]);
  });

  it('an edit while the action runs is handed to it: the model reads the new text before its next step, no new action', async () => {
    h = await bootChatA();
    await waitFor(() => h!.channel().status().connected, 'connected');
    const held = heldAnswer(h.model, 'Summarising the report.', 'The Q3 report, summarised.');
    const { message_id } = h.tg.pushText('summarise the report', { userId: 42 });
    await waitFor(() => held.started(), 'the first model call under way');
    const [action] = h.actions();
    expect(action!.status).toBe('executing');

    const { edit_date } = h.tg.pushEdit(message_id, 'summarise the Q3 report');
    expect(await waitFor(() => h!.outcome(`42:${message_id}:edit:${edit_date}`), 'the edit handed')).toBe(`to-action:${action!.id}`);
    held.release();
    const done = await completed(() => h!.kernel, action!.id);
    expect(done.result).toBe('The Q3 report, summarised.');
    expect(h.actions()).toHaveLength(1);
    const told = held.second().filter((m) => m.role === 'user' && m.content.includes('edited the message this task came from'));
    expect(told).toHaveLength(1);
    expect(told[0]!.content).toContain('[User42 (42) edited the message this task came from; it now reads:]\nsummarise the Q3 report');
  });
});
