/**
 * kill -9 of Keel while an action shows its progress status message: the next start deletes that message (the real
 * grammy against the loopback Bot API), the re-run shows a fresh one that is deleted when it settles, and no status
 * message is left in the chat or on record.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTelegram } from '../../fakes/telegram-server.js';
import { waitFor } from '../../helpers.js';
import { crashHome, exited } from '../channel-harness.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The status messages chatA has on record in its store (read-only: the running Keel owns the file). */
function recorded(home: string): Array<{ key: string; value: string }> {
  const file = join(home, 'channels', 'chatA', 'kit.db');
  if (!existsSync(file)) return [];
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    return db.prepare("SELECT key, value FROM kv WHERE key LIKE 'status:%'").all() as Array<{ key: string; value: string }>;
  } catch {
    return []; // the schema is not there yet
  } finally {
    db.close();
  }
}

const pin = (messageId: number) => [{ name: 'chatA_pin_message', arguments: { chatId: 'me', messageId } }];

/** A Keel home with the scripted model, the loopback Bot API, and `start()` spawning `keel run` as a child. */
async function setup(replies: unknown[]) {
  const tg = await startFakeTelegram();
  const k = crashHome({
    prefix: 'keel-chata-status-',
    replies,
    config: { chatAAutoReplyEnabled: true, chatAPollTimeout: 1 },
    env: { CHATA_TOKEN: tg.token, CHATA_API_ROOT: tg.apiRoot },
  });
  cleanups.push(async () => {
    await k.close();
    await tg.close();
  });
  const statusMessages = () => tg.sent.filter((m) => m.chat.id === 77 && m.kind === 'text' && String(m.text ?? '').startsWith('\u23f3'));
  const deletes = (id: number) =>
    tg.callsOf('deleteMessage').filter((c) => c.params.chat_id === '77' && Number(c.params.message_id) === id).length;
  const answers = () => tg.sent.filter((m) => m.chat.id === 77 && m.text === 'All done.').length;
  return { home: k.home, tg, start: k.start, statusMessages, deletes, answers };
}

describe('chatA progress status message across kill -9', () => {
  it('killed while the action runs: the next start deletes the old status message, the re-run shows a fresh one; none is left behind', async () => {
    // Each run: a first step with a thought (the status message), a slow second step (killed in it), the answer.
    const { home, tg, start, statusMessages, deletes, answers } = await setup([
      { text: 'Looking things up', toolCalls: pin(1), delayMs: 10 },
      { text: 'Still at it', toolCalls: pin(2), delayMs: 3000 },
      { text: 'All done.' },
    ]);
    tg.pushText('look things up for me', { userId: 77 });
    const first = start();
    // Killed once the status message is shown and on record, while the second step is still running.
    const [rec] = await waitFor(() => (recorded(home).length ? recorded(home) : undefined), 'status message on record', 30_000);
    const shown = JSON.parse(rec!.value) as { chatId: string; messageId: string };
    const old = Number(shown.messageId);
    expect(shown.chatId).toBe('77');
    expect(statusMessages().map((m) => m.message_id)).toEqual([old]);
    first.kill('SIGKILL');
    await exited(first);
    expect(deletes(old)).toBe(0);
    expect(answers()).toBe(0);

    start();
    await waitFor(() => deletes(old) > 0, 'the old status message deleted', 30_000);
    await waitFor(() => answers() > 0, 'the answer after the re-run', 60_000);
    // Every status message either process showed is deleted, and nothing stays on record.
    await waitFor(() => statusMessages().every((m) => deletes(m.message_id) > 0), 'every status message deleted', 15_000);
    await waitFor(() => recorded(home).length === 0, 'no status message on record', 15_000);
    expect(statusMessages().length).toBe(2); // the re-run showed a fresh one
    expect(deletes(old)).toBe(1);
    expect(answers()).toBe(1);
  }, 120_000);

  it('killed while deleting the status message of a settled action: recover() at the next start deletes it (no re-run needed)', async () => {
    const { home, tg, start, statusMessages, deletes, answers } = await setup([
      { text: 'Looking things up', toolCalls: pin(1), delayMs: 10 },
      { text: 'All done.' },
    ]);
    tg.pushText('look things up for me', { userId: 77 });
    const first = start();
    // The delete of the status message never reaches Telegram: the process dies while it is in flight.
    tg.onCall = (c) => {
      if (c.method === 'deleteMessage') {
        first.kill('SIGKILL');
        return 'hold';
      }
    };
    await exited(first);
    tg.onCall = undefined;
    expect(answers()).toBe(1);
    const [status] = statusMessages();
    expect(status).toBeDefined();
    expect(recorded(home).map((r) => JSON.parse(r.value).messageId)).toEqual([String(status!.message_id)]);
    const held = deletes(status!.message_id);

    start();
    await waitFor(() => deletes(status!.message_id) > held, 'the leftover status message deleted', 30_000);
    await waitFor(() => recorded(home).length === 0, 'no status message on record', 15_000);
    // Nothing was run again: one answer, one status message.
    expect(answers()).toBe(1);
    expect(statusMessages()).toHaveLength(1);
    expect(deletes(status!.message_id)).toBe(held + 1);
  }, 120_000);
});
