/**
 * chatB on the kit: what the action timelines hear as ignored. A message WhatsApp delivers again after it was recorded
 * (its receipt lost with the connection) is reported once as a duplicate; what chatB never records (the account's own
 * messages elsewhere, status updates while they are off) is only acknowledged, never reported as a duplicate.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers.js';
import { ADMIN, bootChatB, type ChatBHarness, OWNER, USER, whenConnected } from './harness.js';

let h: ChatBHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe('chatB ignored messages', () => {
  it('a redelivery of a recorded message is reported as a duplicate; a message chatB skips before recording is not', async () => {
    h = await bootChatB({ config: { chatBStatusReplyEnabled: false } });
    const ignored: string[] = [];
    h.kernel.hooks.messageIgnored.tap(
      'test',
      (e: { messageId: string; reason: string }) => void ignored.push(`${e.messageId}:${e.reason}`),
    );
    await whenConnected(h);
    // A session in both directions first, so that the owner's next message is a `msg` WhatsApp can resend on retry.
    h.model.replies.push({ text: 'hi' }, { text: 'once' });
    await h.wa.sendText(OWNER, 'hello');
    await h.wa.waitFor((m) => m.text === 'hi', 15_000);

    // Skipped before recording: the account's phone writing to someone else, a status update (off).
    const elsewhere = await h.wa.sendFromPhone('see you at 8', { peer: USER });
    const status = await h.wa.sendText(ADMIN, 'sunset at the beach', { group: 'status@broadcast' });
    await waitFor(() => h!.wa.acked(elsewhere) && h!.wa.acked(status), 'both acknowledged');

    // Recorded, then its receipt lost with the connection: WhatsApp delivers it again after the reconnect.
    h.wa.loseNextReceipt();
    const id = await h.wa.sendText(OWNER, 'are you there?');
    await waitFor(() => ignored.includes(`${id}:duplicate`), 'the redelivery reported as a duplicate', 20_000);
    await waitFor(() => h!.wa.acked(id), 'acked after the redelivery');
    await h.wa.waitFor((m) => m.text === 'once', 15_000);

    expect(h.wa.deliveries(id)).toBeGreaterThanOrEqual(2);
    expect(h.recorded().filter((k) => k === id)).toHaveLength(1);
    expect(h.actions().filter((a) => a.task === 'are you there?')).toHaveLength(1);
    expect(ignored.filter((e) => e === `${id}:duplicate`)).toHaveLength(1);
    expect(h.recorded()).not.toContain(elsewhere);
    expect(h.recorded()).not.toContain(status);
    expect(ignored.filter((e) => e.startsWith(`${elsewhere}:`) || e.startsWith(`${status}:`))).toEqual([]);
  }, 60_000);
});
