/**
 * Slack (chatD, issue 12): inbound event → durable action with many conversations sending at once (against the
 * loopback Slack's Socket Mode), and the outbound send overhead of the kit against a bare WebClient
 * chat.postMessage to the same fake. Each beside its peer measured in the same run.
 *
 * Standalone: `npx tsx bench/slack.ts`.
 */
import { pathToFileURL } from 'node:url';
import { SocketModeClient } from '@slack/socket-mode';
import { WebClient } from '@slack/web-api';
import { renderChunks } from '../sdk/channel-kit/index.js';
import { classifySlack, sendChunk, type SlackChunk } from '../plugins/chatD/src/slack.js';
import { startFakeSlack, type FakeSlack } from '../test/fakes/slack-server.js';

import { type BenchRow, printRows } from './lib.js';
import {
  type OutboundFigures,
  benchKernel,
  channelRows,
  hostFake,
  InboundClock,
  type InboundFigures,
  inRounds,
  interleaved,
  OUTBOUND_ROUNDS,
  LONG_REPLY,
  REPLY_TEXT,
  benchOutbox,
  fakeCostRow,
} from './channel-bench.js';

const silentSlack = { debug() {}, info() {}, warn() {}, error() {}, setLevel() {}, getLevel: () => 'error' as never, setName() {} };
const CHANNELS = 50;
const PER_CHANNEL = 4;

const channelOf = (c: number) => `C0BENCH${String(c).padStart(4, '0')}`;
const message = (i: number) => `message ${Math.floor(i / CHANNELS)} from channel ${i % CHANNELS}`;
const push = (slack: FakeSlack) => (i: number) => {
  slack.pushMessage(message(i), { channel: channelOf(i % CHANNELS), user: `U0B${i % CHANNELS}` });
  return message(i);
};

/**
 * Keel: envelope → chatD (ingress record, ack, receive, durable queue push). Latency from push to actionQueued.
 * `known` (the figure beside the peer): each sender wrote once before the timed burst (the peer's side too), so
 * chatD knows their names, as it does in a running workspace, and both sides run warm. `new`: nothing before the
 * burst, every one of the 50 senders is new and each first message waits for its `users.info` (its own row; the
 * figure the rows gave before 2026-11-26's names, cold process included).
 */
async function inboundKeel(people: 'known' | 'new' = 'known'): Promise<InboundFigures> {
  const slack = await startFakeSlack();
  const k = await benchKernel('chatD', {
    chatDBotToken: slack.botToken,
    chatDAppToken: slack.appToken,
    chatDApiUrl: slack.apiUrl,
    chatDAutoReplyEnabled: true,
  });
  try {
    const clock = new InboundClock().tapQueued(k.kernel);
    while (slack.openSockets() < 1) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 200));
    if (people === 'known') {
      for (let c = 0; c < CHANNELS; c++) slack.pushMessage(`hello ${c}`, { channel: 'C0BENCHWARM', user: `U0B${c}` });
      while (k.kernel.queue.counts().pending < CHANNELS) await new Promise((r) => setTimeout(r, 10));
    }
    return await clock.burst(CHANNELS * PER_CHANNEL, push(slack));
  } finally {
    await k.close();
    await slack.close();
  }
}

/**
 * The peer: a bare SocketModeClient that acks at once and pushes each event straight onto the queue (no ingress),
 * after the same warm-up as Keel's `known` side.
 */
async function inboundBare(): Promise<InboundFigures> {
  const slack = await startFakeSlack();
  const k = await benchKernel();
  const client = new SocketModeClient({ appToken: slack.appToken, logger: silentSlack, clientOptions: { slackApiUrl: slack.apiUrl } });
  try {
    const clock = new InboundClock();
    client.on('slack_event', async (e: { ack: () => Promise<void>; body: { event?: { text?: string } } }) => {
      await e.ack();
      const text = e.body.event?.text ?? '';
      void k.kernel.queue.push({ task: text, source: 'chatD' }).then(() => clock.done(text));
    });
    await client.start();
    // The same warm-up as Keel's side: one message from each sender first.
    for (let c = 0; c < CHANNELS; c++) slack.pushMessage(`hello ${c}`, { channel: 'C0BENCHWARM', user: `U0B${c}` });
    while (k.kernel.queue.counts().pending < CHANNELS) await new Promise((r) => setTimeout(r, 10));
    return await clock.burst(CHANNELS * PER_CHANNEL, push(slack));
  } finally {
    await client.disconnect();
    await k.close();
    await slack.close();
  }
}

/**
 * Outbound: the kit's path (mrkdwn render, ledger, limiter, per-channel order) against WebClient
 * chat.postMessage; the fake in its own process (`process`, the budget) or in this one (`inline`). See outbound.ts.
 */
async function outbound(n: number, where: 'process' | 'inline', text = REPLY_TEXT, round = 0): Promise<OutboundFigures> {
  const fake =
    where === 'process'
      ? await hostFake<{ apiUrl: string; botToken: string }>('slack')
      : await startFakeSlack().then((sl) => ({ info: { apiUrl: sl.apiUrl, botToken: sl.botToken }, close: () => sl.close() }));
  const kit = benchOutbox('chatD', classifySlack);
  const client = new WebClient(fake.info.botToken, {
    slackApiUrl: fake.info.apiUrl,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    logger: silentSlack,
  });
  const first = where === 'process' && text === REPLY_TEXT;
  const mrkdwn = renderChunks(text, 'slack')[0]!;
  try {
    return await interleaved(
      {
        kit: async (i) => {
          const chunks: SlackChunk[] = renderChunks(text, 'slack').map((t) => ({ kind: 'text', text: t }));
          await kit.outbox.deliver(`bench:${i}`, channelOf(Math.abs(i) % 100), chunks, (c, _j, ch) => sendChunk(client, ch, c));
        },
        bare: (i) => client.chat.postMessage({ channel: channelOf(Math.abs(i) % 100), text: mrkdwn }),
        ...(first ? { raw: (i: number) => client.chat.postMessage({ channel: channelOf(Math.abs(i) % 100), text }) } : {}),
      },
      n,
      100,
      { regimes: first && round === 0 },
    );
  } finally {
    kit.close();
    await fake.close();
  }
}

export async function benchSlack(): Promise<BenchRow[]> {
  const keel = await inboundKeel();
  const firstContact = await inboundKeel('new');
  const bare = await inboundBare();
  const out = await inRounds(OUTBOUND_ROUNDS, (r) => outbound(600, 'process', REPLY_TEXT, r));
  const outInline = await outbound(1000, 'inline');
  const outLong = await outbound(1000, 'process', LONG_REPLY);
  const fakeCost = await fakeCostRow<{ apiUrl: string; botToken: string }>({
    channel: 'chatD',
    kind: 'slack',
    request: (info, i) => ({
      url: `${info.apiUrl}chat.postMessage`,
      method: 'POST',
      headers: { authorization: `Bearer ${info.botToken}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ channel: channelOf(Math.abs(i) % 100), text: REPLY_TEXT }).toString(),
    }),
  });
  const rows = channelRows({
    channel: 'chatD',
    load: `${CHANNELS} channels x ${PER_CHANNEL} at once`,
    inboundPeer: 'bare SocketModeClient: ack at once + queue.push (no ingress record, no dedupe)',
    keel,
    bare,
    outboundWhat: 'mrkdwn render + ledger + limiter + per-channel order',
    outboundPeer: 'bare WebClient chat.postMessage, same fake',
    out,
    outInline,
    outLong,
  });
  const load = `${CHANNELS} channels x ${PER_CHANNEL} at once`;
  const newPeople: BenchRow = {
    name: `chatD inbound → durable action p50 (${load}), ${CHANNELS} senders never seen before (each named with users.info first)`,
    value: firstContact.p50,
    unit: 'ms',
    peer: 'bare SocketModeClient: ack at once + queue.push (no ingress record, no dedupe, no names)',
    peerValue: bare.p50,
    budget: 'report',
    ok: true,
  };
  return [...rows.slice(0, 3), newPeople, ...rows.slice(3), fakeCost];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printRows(await benchSlack());
}
