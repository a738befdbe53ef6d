/**
 * chatA inline buttons: a press reaches the running action that sent the keyboard (through `agent:inbox`), once;
 * a press after that action finished becomes a new message linked to it (`replyTo.inResponseTo`). The real
 * kernel, agent loop and grammy against the loopback Bot API; the model is the scripted fake provider.
 */
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers.js';
import { bootChatA, type ChatAHarness } from './harness.js';

let h: ChatAHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Presses on record as handed to an action (`handed:*` in the store). */
function handedOnRecord(home: string): number {
  const db = new DatabaseSync(join(home, 'channels', 'chatA', 'kit.db'), { readOnly: true });
  try {
    return (db.prepare("SELECT COUNT(*) AS n FROM kv WHERE key LIKE 'handed:%'").get() as { n: number }).n;
  } finally {
    db.close();
  }
}

const press = (id: string, from: number, data: string, chat: number, messageId: number) =>
  h!.tg.push({
    callback_query: {
      id,
      from: { id: from, is_bot: false, first_name: 'P', username: `user${from}` },
      data,
      message: { message_id: messageId, date: 0, chat: { id: chat, type: 'private' } },
    },
  });

describe('chatA button presses', () => {
  it('reach the running action that sent them (once, no new action); after it finished they become a linked message', async () => {
    h = await bootChatA();
    await waitFor(() => h!.channel().status().connected, 'connected');
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    let third: Array<{ role: string; content: string }> = [];
    h.model.replies.push(
      {
        toolCalls: [
          {
            name: 'chatA_send_buttons',
            arguments: { chatId: 'this chat', message: 'Book it?', buttons: [{ text: 'Yes', callback_data: 'yes' }] },
          },
        ],
      },
      // The second model call is under way when the press comes.
      async () => {
        await gate;
        return { text: 'Waiting for your choice.' };
      },
      (req) => {
        third = req.messages.map((m) => ({ ...m }));
        return { text: 'You pressed yes: booked.' };
      },
    );
    h.tg.push({
      message: {
        message_id: 10,
        date: 0,
        chat: { id: 42, type: 'private' },
        from: { id: 42, is_bot: false, first_name: 'Admin' },
        text: 'ask me',
      },
    });
    const asked = await waitFor(() => h!.tg.sent.find((m) => m.reply_markup), 'the keyboard');
    const [action] = h.actions();
    expect(action!.status).toBe('executing');

    const ignored: string[] = [];
    h.kernel.hooks.messageIgnored.tap(
      'test',
      (e: { messageId: string; reason: string }) => void ignored.push(`${e.messageId}:${e.reason}`),
    );
    press('cq1', 5, 'yes', 42, asked.message_id);
    await waitFor(() => h!.outcome('cb:cq1'), 'the press to be handled');
    expect(h!.outcome('cb:cq1')).toBe(`to-action:${action!.id}`);
    // Telegram delivers the same press again: the ingress knows it, the action does not get it twice.
    press('cq1', 5, 'yes', 42, asked.message_id);
    await waitFor(() => ignored.includes('cb:cq1:duplicate'), 'the redelivery to be recognised');
    release();

    const done = await waitFor(() => {
      const a = h!.kernel.queue.get(action!.id);
      return a?.status === 'completed' ? a : undefined;
    }, 'the action to finish');
    expect(done.result).toBe('You pressed yes: booked.');
    // No new action for the press; the model saw it once, as untrusted data (user 5 is no admin).
    expect(h.actions()).toHaveLength(1);
    const pressed = third.filter((m) => m.role === 'user' && m.content.includes('[button pressed]'));
    expect(pressed).toHaveLength(1);
    expect(pressed[0]!.content).toMatch(
      new RegExp(
        `^<channel_input untrusted="true" from="chatA:5">\\n\\[button pressed\\] yes \\(by @user5 on message ${asked.message_id}\\)\\n</channel_input>$`,
      ),
    );
    expect(h.tg.callsOf('answerCallbackQuery').map((c) => c.params.callback_query_id)).toEqual(['cq1']);

    // The action is over: a later press on its keyboard is a new message that names it.
    press('cq2', 42, 'yes', 42, asked.message_id);
    const next = await waitFor(() => h!.actions().find((a) => a.id !== action!.id), 'a new action');
    expect(next.task).toBe(`[button pressed] yes\n[on a message sent by action ${action!.id}, which is no longer running]`);
    expect(next.metadata.replyTo).toMatchObject({
      chatId: '42',
      messageId: String(asked.message_id),
      callbackData: 'yes',
      inResponseTo: action!.id,
    });
    expect(h!.outcome('cb:cq2')).toBe('queued');

    // A press on a keyboard no action of ours sent stays an ordinary message, without a link.
    press('cq3', 42, 'other', 42, 999);
    const plain = await waitFor(() => h!.actions().find((a) => a.task === '[button pressed] other'), 'an unlinked action');
    expect(plain.metadata.replyTo).not.toHaveProperty('inResponseTo');
  });

  it('a press still unread when Keel stops becomes the linked new message once, across this stop and the next', async () => {
    h = await bootChatA();
    await waitFor(() => h!.channel().status().connected, 'connected');
    h.model.replies.push(
      {
        toolCalls: [
          {
            name: 'chatA_send_buttons',
            arguments: { chatId: 'this chat', message: 'Book it?', buttons: [{ text: 'Yes', callback_data: 'yes' }] },
          },
        ],
      },
      // The second step never ends: Keel stops while the press waits in the inbox.
      () => new Promise<never>(() => {}),
    );
    h.tg.push({
      message: {
        message_id: 10,
        date: 0,
        chat: { id: 42, type: 'private' },
        from: { id: 42, is_bot: false, first_name: 'A' },
        text: 'ask me',
      },
    });
    const asked = await waitFor(() => h!.tg.sent.find((m) => m.reply_markup), 'the keyboard');
    const [action] = h.actions();
    press('cq5', 42, 'yes', 42, asked.message_id);
    await waitFor(() => h!.outcome('cb:cq5'), 'the press to be handed');
    expect(h!.outcome('cb:cq5')).toBe(`to-action:${action!.id}`);
    expect(handedOnRecord(h.home)).toBe(1);
    h.model.defaultReply = { text: 'noted' };

    const isPress = (a: { task: string }) => a.task.startsWith('[button pressed] yes');
    for (const round of [1, 2]) {
      await h.restart();
      await waitFor(() => h!.channel().status().connected, `connected after restart ${round}`);
      await waitFor(() => h!.actions().find(isPress), 'the press as a new message');
      // Off the record once queued, so no later start makes it again.
      await waitFor(() => handedOnRecord(h!.home) === 0, 'the hand-off record cleared');
      expect(h.actions().filter(isPress)).toHaveLength(1);
      expect(h.actions().find(isPress)!.metadata.replyTo).toMatchObject({ inResponseTo: action!.id, callbackData: 'yes' });
    }
  });

  it('the link survives a restart of the channel', async () => {
    h = await bootChatA({ runAgent: false });
    await waitFor(() => h!.channel().status().connected, 'connected');
    const action = await h.kernel.queue.push({ task: 't', source: 'chatA', metadata: { replyTo: { chatId: '42', messageId: '3' } } });
    const sent = await h.channel().reply(action, { text: 'Pick', buttons: [[{ text: 'A', callback_data: 'a' }]] });
    await h.restart();
    await waitFor(() => h!.channel().status().connected, 'connected again');
    press('cq9', 42, 'a', 42, Number(sent.messageId));
    const linked = await waitFor(() => h!.actions().find((a) => a.task.startsWith('[button pressed] a')), 'the linked action');
    expect(linked.metadata.replyTo).toMatchObject({ inResponseTo: action.id });
  });
});
