/**
 * kill -9 of a Keel process in the middle of a burst of inbound messages and in the middle of a multi-chunk reply.
 * The loopback Bot API counts: no update lost, no action twice, no chunk twice.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeTelegram } from '../../fakes/telegram-server.js';
import { waitFor } from '../../helpers.js';
import { crashHome, exited } from '../channel-harness.js';
import { expectReplyOnce, killAtThirdChunk } from './harness.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(replies: unknown[] = []) {
  const tg = await startFakeTelegram();
  const k = crashHome({
    prefix: 'keel-chata-crash-',
    replies,
    config: { chatAAutoReplyEnabled: true, chatAPollTimeout: 1 },
    env: { CHATA_TOKEN: tg.token, CHATA_API_ROOT: tg.apiRoot },
  });
  cleanups.push(async () => {
    await k.close();
    await tg.close();
  });
  return { home: k.home, tg, start: k.start };
}

describe('chatA crash safety (kill -9)', () => {
  it('mid-burst of inbound messages: every message answered exactly once after the restart', async () => {
    const { tg, start } = await setup();
    const CHATS = 10;
    const PER_CHAT = 3;
    // Each chat: a photo (downloaded before it becomes an action), then two texts that wait behind it in order.
    for (let c = 0; c < CHATS; c++) {
      const chat = 1000 + c;
      tg.files.set(`photo-${c}`, Buffer.from(`JPEG${c}`));
      tg.push({
        message: {
          message_id: 1,
          date: 0,
          chat: { id: chat, type: 'private' },
          from: { id: chat, is_bot: false, first_name: 'U' },
          caption: `photo ${c}`,
          photo: [{ file_id: `photo-${c}`, width: 10, height: 10 }],
        },
      });
      for (let m = 1; m < PER_CHAT; m++) tg.pushText(`message ${m} of chat ${c}`, { userId: chat });
    }
    const first = start();
    // Killed while the burst is being taken in: some messages queued, some recorded and waiting behind a download.
    tg.onCall = (c) => {
      if (c.method === 'getFile' && tg.callsOf('getFile').length === 6) {
        first.kill('SIGKILL');
        return 'hold';
      }
    };
    await exited(first);
    tg.onCall = undefined;
    expect(tg.ackedOffset()).toBeGreaterThan(CHATS * PER_CHAT); // Telegram was told everything arrived
    expect(tg.sent.length).toBeLessThan(CHATS * PER_CHAT);
    // More arrive while Keel is down.
    for (let i = 0; i < 5; i++) tg.pushText(`late message ${i}`, { userId: 2000 + i });
    start();
    const expected = CHATS * PER_CHAT + 5;
    await waitFor(() => tg.sent.length >= expected, 'every message answered', 60_000);
    await new Promise((r) => setTimeout(r, 1500));
    for (let c = 0; c < CHATS; c++)
      expect(
        tg.sent.filter((m) => m.chat.id === 1000 + c),
        `chat ${1000 + c}`,
      ).toHaveLength(PER_CHAT);
    for (let i = 0; i < 5; i++) expect(tg.sent.filter((m) => m.chat.id === 2000 + i)).toHaveLength(1);
    expect(tg.sent.every((m) => m.text === 'fake answer')).toBe(true);
  }, 90_000);

  it('mid multi-chunk reply: the chunks confirmed before the crash are not sent again, the rest are sent once', async () => {
    const paragraphs = Array.from({ length: 30 }, (_, i) => `Part ${i}. ${'The quick brown fox jumps over the lazy dog. '.repeat(10)}`);
    const { tg, start } = await setup([{ text: paragraphs.join('\n\n') }]);
    tg.pushText('write the long report', { userId: 77 });
    const first = start();
    // The process dies while its third chunk's request is in flight.
    await killAtThirdChunk(tg, first, 77);
    start();
    await expectReplyOnce(tg, 77, paragraphs);
  }, 90_000);
});
