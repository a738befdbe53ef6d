/**
 * chatA skills (as SPEC) and the command menu, against the loopback Bot API.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Action, Actor } from '../../../sdk/index.js';
import { waitFor } from '../../helpers.js';
import { bootChatA, type ChatAHarness } from './harness.js';

let h: ChatAHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const OPERATOR: Actor = { kind: 'operator', channel: 'cli' };
const run = (name: string, args: unknown, action?: Action) => h!.kernel.execute(name, args, OPERATOR, action ? { action } : {});

async function ready(config: Record<string, unknown> = {}) {
  h = await bootChatA({ config, runAgent: false });
  await waitFor(() => h!.channel().status().connected, 'connected');
}

describe('chatA skills', () => {
  it('send_chatA sends Markdown and returns the message id; a placeholder chatId takes the chat of the action', async () => {
    await ready();
    const r = await run('send_chatA', { chatId: 321, message: '*hi*' });
    expect(r.success).toBe(true);
    const out = JSON.parse(r.result) as { messageId: number };
    expect(h!.tg.sent.find((m) => m.message_id === out.messageId)).toMatchObject({
      chat: { id: 321 },
      text: '<i>hi</i>',
      parse_mode: 'HTML',
    });
    const action = await h!.kernel.queue.push({ task: 't', source: 'chatA', metadata: { replyTo: { chatId: '987', messageId: '5' } } });
    const r2 = await run('send_chatA', { chatId: 'the user', message: 'hello' }, action);
    expect(r2.success).toBe(true);
    expect(h!.tg.sent.at(-1)).toMatchObject({ chat: { id: 987 }, text: 'hello' });
    // The same call in the same action (a re-run after a crash) is not sent twice.
    const before = h!.tg.sent.length;
    const r3 = await run('send_chatA', { chatId: 'the user', message: 'hello' }, action);
    expect(JSON.parse(r3.result)).toEqual(JSON.parse(r2.result));
    expect(h!.tg.sent.length).toBe(before);
    const bad = await run('send_chatA', { chatId: '@someone', message: 'x' });
    expect(bad.success).toBe(false);
    expect(bad.result).toMatch(/not a numeric Telegram chat id/);
  });

  it('chatA_send_buttons wraps a 1D array into rows and rejects a button without callback_data or url', async () => {
    await ready();
    const r = await run('chatA_send_buttons', {
      chatId: '5',
      message: 'Pick',
      buttons: [
        { text: 'A', callback_data: 'a' },
        { text: 'Site', url: 'https://e.com' },
      ],
    });
    expect(r.success).toBe(true);
    expect(h!.tg.sent.at(-1)!.reply_markup).toEqual({
      inline_keyboard: [[{ text: 'A', callback_data: 'a' }], [{ text: 'Site', url: 'https://e.com' }]],
    });
    const r2 = await run('chatA_send_buttons', {
      chatId: '5',
      message: 'Grid',
      buttons: [
        [
          { text: '1', callback_data: '1' },
          { text: '2', callback_data: '2' },
        ],
      ],
    });
    expect(r2.success).toBe(true);
    expect(h!.tg.sent.at(-1)!.reply_markup).toEqual({
      inline_keyboard: [
        [
          { text: '1', callback_data: '1' },
          { text: '2', callback_data: '2' },
        ],
      ],
    });
    const bad = await run('chatA_send_buttons', { chatId: '5', message: 'x', buttons: [{ text: 'nothing' }] });
    expect(bad.success).toBe(false);
    expect(bad.result).toMatch(/exactly one of callback_data or an http\(s\) url/);
  });

  it('chatA_send_poll takes 2 to 10 options', async () => {
    await ready();
    const r = await run('chatA_send_poll', { chatId: '5', question: 'Lunch?', options: ['pizza', 'soup'], isAnonymous: false });
    expect(r.success).toBe(true);
    const call = h!.tg.callsOf('sendPoll')[0]!;
    expect(call.params).toMatchObject({
      chat_id: '5',
      question: 'Lunch?',
      options: [{ text: 'pizza' }, { text: 'soup' }],
      is_anonymous: false,
      allows_multiple_answers: false,
    });
    expect((await run('chatA_send_poll', { chatId: '5', question: 'q', options: ['one'] })).success).toBe(false);
    expect(
      (await run('chatA_send_poll', { chatId: '5', question: 'q', options: Array.from({ length: 11 }, (_, i) => `o${i}`) })).success,
    ).toBe(false);
    expect(h!.tg.callsOf('sendPoll')).toHaveLength(1);
  });

  it('chatA_edit_message edits what send_chatA returned', async () => {
    await ready();
    const { messageId } = JSON.parse((await run('send_chatA', { chatId: '8', message: 'draft' })).result) as { messageId: number };
    // A 429 on the edit is waited out (retry_after) and the edit made once.
    h!.tg.failNext('editMessageText', { code: 429, description: 'Too Many Requests: retry after 1', retryAfter: 1 });
    const r = await run('chatA_edit_message', { chatId: '8', messageId, newText: '**final**' });
    expect(r.success, r.result).toBe(true);
    expect(h!.tg.callsOf('editMessageText')).toHaveLength(2);
    expect(h!.tg.sent.find((m) => m.message_id === messageId)!.text).toBe('<b>final</b>');
  });

  it('chatA_react reacts natively, and where it cannot, replies with the emoji and says why', async () => {
    await ready();
    const ok = await run('chatA_react', { chatId: '8', messageId: 3 });
    expect(JSON.parse(ok.result)).toMatchObject({ native: true, reacted: '\u{1F44D}' });
    expect(h!.tg.callsOf('setMessageReaction')[0]!.params).toMatchObject({
      chat_id: '8',
      message_id: 3,
      reaction: [{ type: 'emoji', emoji: '\u{1F44D}' }],
    });
    h!.tg.failNext('setMessageReaction', { code: 400, description: 'Bad Request: REACTION_INVALID' });
    const fb = await run('chatA_react', { chatId: '8', messageId: 4, emoji: '\u{1F525}' });
    expect(JSON.parse(fb.result)).toMatchObject({ native: false, note: expect.stringMatching(/Native reactions are unavailable/) });
    expect(h!.tg.sent.at(-1)).toMatchObject({ chat: { id: 8 }, text: '\u{1F525}' });
  });

  it('chatA_pin_message pins silently by default', async () => {
    await ready();
    expect((await run('chatA_pin_message', { chatId: '8', messageId: 9 })).success).toBe(true);
    expect(h!.tg.callsOf('pinChatMessage')[0]!.params).toMatchObject({ chat_id: '8', message_id: 9, disable_notification: true });
  });

  it('files: an inbound photo and voice note are saved under downloads/ and named in the task', async () => {
    await ready();
    h!.tg.files.set('ph1', Buffer.from('JPEGDATA'));
    h!.tg.files.set('vo1', Buffer.from('OGGDATA'));
    h!.tg.push({
      message: {
        message_id: 50,
        date: 0,
        chat: { id: 9, type: 'private' },
        from: { id: 9, is_bot: false, first_name: 'A' },
        caption: 'look',
        photo: [{ file_id: 'ph1', width: 90, height: 90 }],
      },
    });
    h!.tg.push({
      message: {
        message_id: 51,
        date: 0,
        chat: { id: 9, type: 'private' },
        from: { id: 9, is_bot: false, first_name: 'A' },
        voice: { file_id: 'vo1', duration: 2 },
      },
    });
    await waitFor(() => h!.actions().length === 2, 'two actions');
    const [photo, voice] = h!.actions().sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    expect(photo!.task).toMatch(/^look\n\[attachment: .*downloads\/chatA\/9_50_photo\.jpg \(photo\)/);
    expect(voice!.task).toMatch(/not transcribed because no speech-to-text provider is configured/);
    // Outbound file: multipart upload.
    const file = join(h!.home, 'report.txt');
    writeFileSync(file, 'report');
    const sent = await h!.channel().send('9', { text: 'here', files: [{ path: file, caption: 'the report' }] });
    expect(sent.messageIds).toHaveLength(2);
    expect(h!.tg.callsOf('sendDocument')[0]!.files.document).toMatchObject({ name: 'report.txt', size: 6 });
  });
});

describe('chatA commands', () => {
  it('registers the menu and answers help, status, models, queue; reset only for admins; cancel own actions', async () => {
    await ready();
    await waitFor(() => h!.tg.callsOf('setMyCommands').length === 1, 'menu registered');
    expect(h!.tg.callsOf('setMyCommands')[0]!.params.commands.map((c: { command: string }) => c.command)).toEqual([
      'status',
      'queue',
      'cancel',
      'reset',
      'models',
      'help',
    ]);
    const answer = async (text: string, userId: number) => {
      const n = h!.tg.sent.filter((m) => m.chat.id === userId).length;
      h!.tg.pushText(text, { userId });
      return (await waitFor(() => h!.tg.sent.filter((m) => m.chat.id === userId)[n], `answer to ${text}`)).text!;
    };
    expect(await answer('/help', 5)).toMatch(/\/status/);
    expect(await answer('/status', 5)).toMatch(/Telegram: connected as @keel_test_bot[\s\S]*Queue:/);
    expect(await answer('/models', 5)).toMatch(/fake-model/);
    // No agent runs here, so a message stays pending: queue lists it, cancel removes it.
    h!.tg.pushText('long job', { userId: 5 });
    await waitFor(() => h!.actions().some((a) => a.task === 'long job'), 'queued');
    expect(await answer('/queue', 5)).toMatch(/long job/);
    expect(await answer('/reset', 5)).toMatch(/Only an admin/);
    expect(await answer('/cancel', 5)).toMatch(/Cancelled/);
    expect(h!.actions().some((a) => a.task === 'long job' && a.status === 'pending')).toBe(false);
    // The admin may reset.
    h!.tg.pushText('another', { userId: 42 });
    await waitFor(() => h!.actions().some((a) => a.task === 'another'), 'queued');
    expect(await answer('/reset', 42)).toMatch(/Reset: 1 action/);
    // Built-in commands never become actions.
    expect(h!.actions().some((a) => a.task.startsWith('/'))).toBe(false);
  });

  it('a button press becomes a message of its chat', async () => {
    await ready();
    h!.tg.push({
      callback_query: {
        id: 'cq1',
        from: { id: 5, is_bot: false, first_name: 'A' },
        data: 'yes',
        message: { message_id: 77, date: 0, chat: { id: 5, type: 'private' } },
      },
    });
    const a = await waitFor(() => h!.actions()[0], 'action');
    expect(a.task).toBe('[button pressed] yes');
    expect(a.metadata.replyTo).toMatchObject({ chatId: '5', messageId: '77', callbackData: 'yes' });
    expect(h!.tg.callsOf('answerCallbackQuery')).toHaveLength(1);
  });
});
