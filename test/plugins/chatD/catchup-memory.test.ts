/**
 * chatD's catch-up keeps, per conversation, only what it still needs in a daemon that runs for months: the kinds of
 * the conversations it reads (those with a cursor, and those heard from on the last connection), not of every
 * conversation ever seen; "followed live" for this connection only. A unit test of the CatchUp object, Slack faked.
 */
import type { WebClient } from '@slack/web-api';
import { afterEach, describe, expect, it } from 'vitest';
import { CatchUp, cursorKey } from '../../../plugins/chatD/src/catchup.js';
import type { SlackMessageEvent } from '../../../plugins/chatD/src/inbound.js';
import { ChannelStore } from '../../../sdk/channel-kit/index.js';
import { rm, tmp, waitFor } from '../../helpers.js';

const log = { debug() {}, info() {}, warn() {}, error() {} };
const cleanup: Array<() => void> = [];
afterEach(() => {
  for (const f of cleanup.splice(0)) f();
});

/** A ts `seconds` ago, as Slack writes it. */
const ago = (seconds: number) => `${Math.floor(Date.now() / 1000) - seconds}.000100`;

function setUp() {
  const home = tmp('keel-chatD-catchup-');
  const store = ChannelStore.open(home, 'chatD');
  const abort = new AbortController();
  cleanup.push(() => {
    abort.abort();
    store.close();
    rm(home);
  });
  /** Messages conversations.history answers per channel (once). */
  const history = new Map<string, Array<{ type: string; user: string; text: string; ts: string }>>();
  const infoAsked: string[] = [];
  const client = {
    conversations: {
      history: async ({ channel }: { channel: string }) => {
        const messages = history.get(channel) ?? [];
        history.delete(channel);
        return { ok: true, messages: [...messages].reverse(), has_more: false };
      },
      replies: async () => ({ ok: true, messages: [], has_more: false }),
      info: async ({ channel }: { channel: string }) => {
        infoAsked.push(channel);
        return { ok: true, channel: { id: channel } };
      },
    },
    users: { conversations: async () => ({ ok: true, channels: [] }) },
  } as unknown as WebClient;
  const recorded: SlackMessageEvent[] = [];
  const catchUp = new CatchUp({
    client,
    store,
    log,
    signal: abort.signal,
    record: (_channel, events, cursors) => {
      for (const c of cursors) store.setValue(c.key, c.newest);
      recorded.push(...events);
      return events;
    },
    rebuild() {},
    connected: () => true,
    interval: () => 0,
  });
  cleanup.unshift(() => void catchUp.stop());
  /** A new connection's hello, and the end of the catch-up that follows it. */
  const hello = async () => {
    const before = catchUp.lastCatchUpAt;
    catchUp.afterConnect();
    await waitFor(() => catchUp.lastCatchUpAt !== before, 'the catch-up after the hello');
    // lastCatchUpAt has a millisecond resolution: the next hello's catch-up must be told apart.
    await new Promise((r) => setTimeout(r, 2));
  };
  return { store, catchUp, history, infoAsked, recorded, hello };
}

describe('chatD catch-up memory', () => {
  it('forgets the kinds of conversations it does not read and who was followed on earlier connections; keeps what a read needs', async () => {
    const { store, catchUp, history, infoAsked, recorded, hello } = setUp();
    // A private channel with a cursor (catch-up reads it), heard from long ago.
    store.setValue(cursorKey('G0KEEP'), ago(600));
    catchUp.live('G0KEEP', 'group');
    // Thousands of conversations seen once in a live event (an edit, a message not recorded), no cursor.
    const many = 3000;
    for (let i = 0; i < many; i++) {
      catchUp.live(`C${i}`, 'channel');
      catchUp.live(`D${i}`, 'im');
    }
    await hello();
    await hello();
    // One heard from on the connection just ended, whose cursor is not written yet: kept.
    catchUp.live('G0LATE', 'mpim');
    await hello();
    // Without the bound: every conversation ever seen (2 * many + 2) in both maps. Followed: G0KEEP, read on this
    // connection (from now on the socket brings its messages).
    expect(catchUp.sizes()).toEqual({ kinds: 2, followed: 1 });

    // A message missed in G0KEEP is recorded with the kind its live events said, without asking Slack.
    history.set('G0KEEP', [{ type: 'message', user: 'U1', text: 'missed', ts: ago(30) }]);
    store.setValue(cursorKey('G0LATE'), ago(60));
    history.set('G0LATE', [{ type: 'message', user: 'U1', text: 'missed too', ts: ago(20) }]);
    await hello();
    // The most recently active first.
    expect(recorded.map((e) => [e.channel, e.channel_type, e.text])).toEqual([
      ['G0LATE', 'mpim', 'missed too'],
      ['G0KEEP', 'group', 'missed'],
    ]);
    expect(infoAsked).toEqual([]);
    // Followed on this connection: the two read, and one heard from live (until the next hello).
    catchUp.live('C0LIVE', 'channel');
    expect(catchUp.sizes()).toEqual({ kinds: 3, followed: 3 });
    await hello();
    expect(catchUp.sizes()).toEqual({ kinds: 3, followed: 2 });
    await hello();
    expect(catchUp.sizes()).toEqual({ kinds: 2, followed: 2 });
  });
});
