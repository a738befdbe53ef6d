/**
 * kill -9 of a Keel process in the middle of a burst of inbound Slack messages and in the middle of a multi-part
 * reply. The loopback Slack counts: no event lost (an envelope not acknowledged is sent again on the next
 * connection, one acknowledged was durable first), no action twice, no message part twice.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeSlack } from '../../fakes/slack-server.js';
import { waitFor } from '../../helpers.js';
import { crashHome, exited } from '../channel-harness.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(replies: unknown[] = []) {
  const slack = await startFakeSlack();
  const k = crashHome({
    prefix: 'keel-chatd-crash-',
    replies,
    config: { chatDAutoReplyEnabled: true },
    env: { CHATD_BOT_TOKEN: slack.botToken, CHATD_APP_TOKEN: slack.appToken, CHATD_API_URL: slack.apiUrl },
  });
  cleanups.push(async () => {
    await k.close();
    await slack.close();
  });
  return { slack, start: k.start };
}

const channelOf = (i: number) => `D0CRASH${String(i).padStart(3, '0')}`;

describe('chatD crash safety (kill -9)', () => {
  it('mid-burst of inbound messages: every message answered exactly once after the restart', async () => {
    const { slack, start } = await setup();
    const N = 30;
    for (let i = 0; i < N; i++) slack.pushMessage(`message ${i}`, { channelType: 'im', channel: channelOf(i), user: `U0CRASH${i}` });
    const first = start();
    // Killed while actions are being worked on: some answered, some queued, some only recorded. The sixth
    // reply is never accepted by Slack: the process dies while it is in flight.
    let replies = 0;
    slack.onCall = (c) => {
      if (c.method === 'chat.postMessage' && ++replies === 6) {
        first.kill('SIGKILL');
        return 'hold';
      }
    };
    await exited(first);
    slack.onCall = undefined;
    const answeredBefore = new Set(slack.posted.map((m) => m.channel)).size;
    expect(answeredBefore).toBe(5);
    // More arrive while Keel is down.
    for (let i = N; i < N + 5; i++) slack.pushMessage(`message ${i}`, { channelType: 'im', channel: channelOf(i), user: `U0CRASH${i}` });
    start();
    await waitFor(() => new Set(slack.posted.map((m) => m.channel)).size === N + 5, 'every conversation answered', 60_000);
    await new Promise((r) => setTimeout(r, 1500));
    for (let i = 0; i < N + 5; i++) {
      const got = slack.posted.filter((m) => m.channel === channelOf(i));
      expect(got, channelOf(i)).toHaveLength(1);
      expect(got[0]!.text).toBe('fake answer');
    }
    expect(slack.unacked()).toBe(0);
  }, 90_000);

  it('mid multi-part reply: the parts confirmed before the crash are not sent again, the rest are sent once', async () => {
    const paragraphs = Array.from({ length: 30 }, (_, i) => `Part ${i}. ${'The quick brown fox jumps over the lazy dog. '.repeat(10)}`);
    const { slack, start } = await setup([{ text: paragraphs.join('\n\n') }]);
    slack.pushMessage('write the long report', { channelType: 'im', channel: 'D0LONGRPT1' });
    const first = start();
    let n = 0;
    slack.onCall = (c) => {
      if (c.method === 'chat.postMessage' && ++n === 3) {
        first.kill('SIGKILL');
        return 'hold';
      }
    };
    await exited(first);
    slack.onCall = undefined;
    expect(slack.posted.filter((m) => m.channel === 'D0LONGRPT1')).toHaveLength(2);
    start();
    await waitFor(
      () =>
        slack.posted
          .filter((m) => m.channel === 'D0LONGRPT1')
          .map((m) => m.text)
          .join('\n\n')
          .includes('Part 29.'),
      'the whole reply',
      60_000,
    );
    await new Promise((r) => setTimeout(r, 2500));
    const texts = slack.posted.filter((m) => m.channel === 'D0LONGRPT1').map((m) => m.text);
    expect(new Set(texts).size).toBe(texts.length);
    const joined = texts.join('\n\n');
    for (const p of paragraphs) expect(joined.split(p.slice(0, 9)).length - 1, p.slice(0, 8)).toBe(1);
    const order = paragraphs.map((p) => joined.indexOf(p.slice(0, 9)));
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  }, 90_000);
});
