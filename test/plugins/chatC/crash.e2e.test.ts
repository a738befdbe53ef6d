/**
 * kill -9 of a Keel process in the middle of a burst of inbound Discord messages and in the middle of a
 * multi-chunk reply (also right after Discord accepted a chunk whose answer never came back). The loopback Discord
 * counts: no message lost, no action twice, no chunk twice.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeDiscord, type DcMessage, type FakeDiscord } from '../../fakes/discord-server.js';
import { waitFor } from '../../helpers.js';
import { crashHome, exited } from '../channel-harness.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(replies: unknown[] = []) {
  const dc = await startFakeDiscord({ heartbeatMs: 500 });
  const k = crashHome({
    prefix: 'keel-chatc-crash-',
    replies,
    config: { chatCAutoReplyEnabled: true },
    env: { CHATC_TOKEN: dc.token, CHATC_API_URL: dc.apiUrl },
  });
  cleanups.push(async () => {
    await k.close();
    await dc.close();
  });
  return { dc, start: k.start };
}

const repliesTo = (dc: FakeDiscord, m: DcMessage) => dc.sent.filter((s) => s.message_reference?.message_id === m.id);

describe('chatC crash safety (kill -9)', () => {
  it('mid-burst of inbound messages: every message answered exactly once after the restart, also those sent while Keel was down', async () => {
    const { dc, start } = await setup();
    const first = start();
    await waitFor(() => dc.gateway.identifies >= 1 && dc.commands.length > 0, 'connected', 30_000);
    const channels = Array.from({ length: 10 }, (_, i) => `31000000000000000${10 + i}`);
    const inbound: DcMessage[] = [];
    // Killed while actions are being worked on: some answered, some queued, some only recorded.
    let typing = 0;
    dc.onCall = (c) => {
      if (c.route === 'POST /channels/:id/typing' && ++typing === 6) first.kill('SIGKILL');
    };
    for (let round = 0; round < 3; round++)
      for (const [i, cid] of channels.entries())
        inbound.push(dc.pushMessage(`message ${round}-${i}`, { channelId: cid, userId: `44000000000000000${10 + i}` }));
    await exited(first);
    dc.onCall = undefined;
    expect(inbound.filter((m) => repliesTo(dc, m).length > 0).length).toBeLessThan(inbound.length);
    // More arrive while Keel is down: Discord will not replay them to a new session; the history catch-up must.
    for (const [i, cid] of channels.slice(0, 5).entries())
      inbound.push(dc.pushMessage(`late ${i}`, { channelId: cid, userId: `44000000000000000${10 + i}` }));
    start();
    await waitFor(() => inbound.every((m) => repliesTo(dc, m).length > 0), 'every message answered', 60_000);
    await new Promise((r) => setTimeout(r, 1500));
    for (const m of inbound) {
      expect(repliesTo(dc, m), m.content).toHaveLength(1);
      expect(repliesTo(dc, m)[0]!.content).toBe('fake answer');
    }
  }, 90_000);

  it('mid multi-chunk reply: chunks confirmed before the crash are not sent again, the rest once — also a chunk Discord took whose answer was lost', async () => {
    const paragraphs = Array.from({ length: 24 }, (_, i) => `Part ${i}. ${'The quick brown fox jumps over the lazy dog. '.repeat(8)}`);
    const { dc, start } = await setup([{ text: paragraphs.join('\n\n') }]);
    const first = start();
    await waitFor(() => dc.gateway.identifies >= 1 && dc.commands.length > 0, 'connected', 30_000);
    // Discord creates the third chunk, but the process dies before the answer arrives (the duplicate window on
    // platforms without idempotency): the restart sends it again with the same nonce and Discord keeps one.
    let posts = 0;
    dc.onCall = (c) => {
      if (c.route === 'POST /channels/:id/messages' && ++posts === 3) {
        setTimeout(() => first.kill('SIGKILL'), 50);
        return 'accept-and-hold';
      }
    };
    const q = dc.pushMessage('write the long report', { userId: '450000000000000045', dm: true });
    await exited(first);
    dc.onCall = undefined;
    expect(dc.sentTo(q.channel_id)).toHaveLength(3);
    start();
    await waitFor(
      () =>
        dc
          .sentTo(q.channel_id)
          .map((m) => m.content)
          .join('\n\n')
          .includes('Part 23.'),
      'the whole reply',
      60_000,
    );
    await new Promise((r) => setTimeout(r, 2500));
    const texts = dc.sentTo(q.channel_id).map((m) => m.content);
    expect(new Set(texts).size).toBe(texts.length);
    const joined = texts.join('\n\n');
    for (const p of paragraphs) expect(joined.split(p.slice(0, 8)).length - 1, p.slice(0, 8)).toBe(1);
    const order = paragraphs.map((p) => joined.indexOf(p.slice(0, 8)));
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    // The third chunk was posted twice, and Discord answered the second with the message of the first.
    const nonces = dc
      .callsOf('POST /channels/:id/messages')
      .filter((c) => c.path.includes(q.channel_id))
      .map((c) => c.body.nonce);
    expect(nonces.length).toBe(texts.length + 1);
    expect(nonces.filter((n) => n === nonces[2])).toHaveLength(2);
  }, 90_000);
});
