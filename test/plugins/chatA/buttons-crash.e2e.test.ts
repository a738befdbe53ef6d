/**
 * kill -9 of Keel while input waits in the inbox of a running action (a press of a button that action sent, an edit
 * of the message it came from): Telegram was told the input was received, so it must not be lost with the process.
 * The next start makes it the new message that names that action (`keel run` as a child, real grammy against the
 * loopback Bot API, the scripted model).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { readQueueList } from '../../../kernel/queue/index.js';
import type { Action } from '../../../sdk/index.js';
import { startFakeTelegram } from '../../fakes/telegram-server.js';
import { waitFor } from '../../helpers.js';
import { crashHome, exited } from '../channel-harness.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Rows of chatA's store, read beside the running Keel (read-only; WAL allows it). */
function rows<T>(home: string, sql: string, ...args: string[]): T[] {
  const file = join(home, 'channels', 'chatA', 'kit.db');
  if (!existsSync(file)) return [];
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    return db.prepare(sql).all(...args) as T[];
  } catch {
    return []; // the schema is not there yet
  } finally {
    db.close();
  }
}

const outcome = (home: string, messageId: string) =>
  rows<{ outcome: string }>(home, "SELECT outcome FROM inbound WHERE message_id = ? AND state = 'done'", messageId)[0]?.outcome;
const handedOnRecord = (home: string) => rows<{ key: string }>(home, "SELECT key FROM kv WHERE key LIKE 'handed:%'");

async function actions(home: string): Promise<Action[]> {
  const list = await readQueueList(home);
  return [...list.pending, ...list.completed, ...list.failed];
}

describe('chatA input handed to a running action, across kill -9', () => {
  it('a press handed to the running action is not lost when Keel dies before the action used it', async () => {
    const tg = await startFakeTelegram();
    const k = crashHome({
      prefix: 'keel-chata-press-',
      // Every run: the keyboard, then a long step (the press arrives during it; the first run is killed in it).
      replies: [
        {
          toolCalls: [
            {
              name: 'chatA_send_buttons',
              arguments: { chatId: 'this chat', message: 'Book it?', buttons: [{ text: 'Yes', callback_data: 'yes' }] },
            },
          ],
        },
        { text: 'Waiting for your choice.', delayMs: 60_000 },
      ],
      config: { chatAAutoReplyEnabled: true, chatAPollTimeout: 1, adminUsers: { chatA: ['77'] } },
      env: { CHATA_TOKEN: tg.token, CHATA_API_ROOT: tg.apiRoot },
    });
    cleanups.push(async () => {
      await k.close();
      await tg.close();
    });

    tg.pushText('book a table for me', { userId: 77 });
    const first = k.start();
    const keyboard = await waitFor(() => tg.sent.find((m) => m.chat.id === 77 && m.reply_markup), 'the keyboard', 30_000);
    tg.push({
      callback_query: {
        id: 'cq1',
        from: { id: 77, is_bot: false, first_name: 'P', username: 'user77' },
        data: 'yes',
        message: { message_id: keyboard.message_id, date: 0, chat: { id: 77, type: 'private' } },
      },
    });
    // Handed to the action (acknowledged to Telegram, the ingress done with it), then the process dies.
    const handed = await waitFor(() => outcome(k.home, 'cb:cq1'), 'the press handed to the action', 30_000);
    expect(handed).toMatch(/^to-action:/);
    const actionId = handed.slice('to-action:'.length);
    expect(tg.callsOf('answerCallbackQuery').map((c) => c.params.callback_query_id)).toEqual(['cq1']);
    first.kill('SIGKILL');
    await exited(first);
    expect((await actions(k.home)).filter((a) => a.task.startsWith('[button pressed]'))).toEqual([]);

    const second = k.start();
    const isPress = (a: Action) => a.task.startsWith('[button pressed] yes');
    const made = await waitFor(async () => (await actions(k.home)).find(isPress), 'the press as a new message', 30_000);
    expect(made.task).toBe(`[button pressed] yes\n[on a message sent by action ${actionId}, which is no longer running]`);
    expect(made.metadata.replyTo).toMatchObject({ chatId: '77', callbackData: 'yes', inResponseTo: actionId });
    await waitFor(() => (handedOnRecord(k.home).length === 0 ? true : undefined), 'the hand-off record cleared', 15_000);
    // Once: the record is gone, and the interrupted action runs again on its own.
    expect((await actions(k.home)).filter(isPress)).toHaveLength(1);
    expect((await actions(k.home)).find((a) => a.id === actionId)).toBeDefined();
    second.kill('SIGKILL');
    await exited(second);
  }, 120_000);

  it('an edit handed to the running action is not lost when Keel dies before the action read it', async () => {
    const tg = await startFakeTelegram();
    const k = crashHome({
      prefix: 'keel-chata-edit-',
      // Every run: one long step (the edit arrives during it; the first run is killed in it).
      replies: [{ text: 'Summarising.', delayMs: 60_000 }],
      config: { chatAAutoReplyEnabled: true, chatAPollTimeout: 1, adminUsers: { chatA: ['77'] } },
      env: { CHATA_TOKEN: tg.token, CHATA_API_ROOT: tg.apiRoot },
    });
    cleanups.push(async () => {
      await k.close();
      await tg.close();
    });

    const { message_id } = tg.pushText('summarise the report', { userId: 77 });
    const first = k.start();
    const running = await waitFor(async () => (await actions(k.home)).find((a) => a.status === 'executing'), 'the action to run', 30_000);
    const { edit_date } = tg.pushEdit(message_id, 'summarise the Q3 report');
    const key = `77:${message_id}:edit:${edit_date}`;
    expect(await waitFor(() => outcome(k.home, key), 'the edit handed to the action', 30_000)).toBe(`to-action:${running.id}`);
    expect(handedOnRecord(k.home)).toHaveLength(1);
    first.kill('SIGKILL');
    await exited(first);

    const second = k.start();
    const isEdit = (a: Action) => a.task === 'summarise the Q3 report';
    const made = await waitFor(async () => (await actions(k.home)).find(isEdit), 'the edit as a new message', 30_000);
    expect(made.metadata.edit).toEqual({ of: `77:${message_id}`, at: String(edit_date), after: running.id });
    expect(made.metadata.replyTo).toMatchObject({ chatId: '77', messageId: String(message_id) });
    await waitFor(() => (handedOnRecord(k.home).length === 0 ? true : undefined), 'the hand-off record cleared', 15_000);
    expect((await actions(k.home)).filter(isEdit)).toHaveLength(1);
    second.kill('SIGKILL');
    await exited(second);
  }, 120_000);
});
