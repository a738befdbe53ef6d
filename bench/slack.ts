/**
 * Slack (chatD, issue 12): inbound event → durable action with many conversations sending at once (against the
 * loopback Slack's Socket Mode), and the outbound send overhead of the kit against a bare WebClient
 * chat.postMessage to the same fake. Each beside its peer measured in the same run.
 *
 * Standalone: `npx tsx bench/slack.ts`.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { SocketModeClient } from '@slack/socket-mode';
import { WebClient } from '@slack/web-api';
import { startKernel } from '../kernel/kernel.js';
import { LogSink } from '../kernel/log.js';
import { ChannelStore, DeliveryLedger, Outbox, RateLimiter, renderChunks } from '../sdk/channel-kit/index.js';
import { classifySlack, sendChunk, type SlackChunk } from '../plugins/chatD/src/slack.js';
import { startFakeSlack, type FakeSlack } from '../test/fakes/slack-server.js';
import { rm, tmp } from '../test/helpers.js';
import { type BenchRow, printRows } from './lib.js';
import { hostFake, interleaved } from './outbound.js';

const quiet = { debug() {}, info() {}, warn() {}, error: (m: string) => console.error(m) };
const silentSlack = { debug() {}, info() {}, warn() {}, error() {}, setLevel() {}, getLevel: () => 'error' as never, setName() {} };
const CHANNELS = 50;
const PER_CHANNEL = 4;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

const channelOf = (c: number) => `C0BENCH${String(c).padStart(4, '0')}`;

async function burst(slack: FakeSlack, pushedAt: Map<string, number>): Promise<void> {
  for (let m = 0; m < PER_CHANNEL; m++) {
    for (let c = 0; c < CHANNELS; c++) {
      const text = `message ${m} from channel ${c}`;
      pushedAt.set(text, performance.now());
      slack.pushMessage(text, { channel: channelOf(c), user: `U0B${c}` });
    }
  }
}

/** Keel: envelope → chatD (ingress record, ack, receive, durable queue push). Latency from push to actionQueued. */
async function inboundKeel(): Promise<{ p50: number; p99: number; perSecond: number }> {
  const home = tmp('keel-bench-chatd-');
  const builtins = tmp('keel-bench-builtins-');
  const slack = await startFakeSlack();
  writeFileSync(
    join(home, 'keel.config.yaml'),
    JSON.stringify({
      chatDBotToken: slack.botToken,
      chatDAppToken: slack.appToken,
      chatDApiUrl: slack.apiUrl,
      chatDAutoReplyEnabled: true,
    }),
  );
  const chatD = {
    id: 'chatD',
    origin: 'builtin' as const,
    dir: join(import.meta.dirname, '..', 'plugins', 'chatD'),
    manifest: (await import('../plugins/chatD/manifest.js')).default,
    load: async () => (await import('../plugins/chatD/index.js')).default,
  };
  const kernel = await startKernel({
    home,
    builtinDir: builtins,
    extraPlugins: [chatD],
    env: {},
    watchSkills: false,
    watchConfig: false,
    runAgent: false,
    logs: new LogSink({ quiet: true }),
  });
  try {
    const pushedAt = new Map<string, number>();
    const latencies: number[] = [];
    let done!: () => void;
    const all = new Promise<void>((r) => (done = r));
    kernel.hooks.actionQueued.tapPromise('bench', async (a) => {
      const t0 = pushedAt.get(a.task);
      if (t0 !== undefined) latencies.push(performance.now() - t0);
      if (latencies.length === CHANNELS * PER_CHANNEL) done();
    });
    while (slack.openSockets() < 1) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 200));
    const t = performance.now();
    await burst(slack, pushedAt);
    await all;
    const elapsed = (performance.now() - t) / 1000;
    return { p50: pct(latencies, 50), p99: pct(latencies, 99), perSecond: latencies.length / elapsed };
  } finally {
    await kernel.stop();
    await slack.close();
    rm(home);
    rm(builtins);
  }
}

/** The peer: a bare SocketModeClient that acks at once and pushes each event straight onto the queue (no ingress). */
async function inboundBare(): Promise<{ p50: number; p99: number; perSecond: number }> {
  const home = tmp('keel-bench-bare-');
  const builtins = tmp('keel-bench-builtins-');
  const slack = await startFakeSlack();
  const kernel = await startKernel({
    home,
    builtinDir: builtins,
    env: {},
    watchSkills: false,
    watchConfig: false,
    runAgent: false,
    logs: new LogSink({ quiet: true }),
  });
  const client = new SocketModeClient({ appToken: slack.appToken, logger: silentSlack, clientOptions: { slackApiUrl: slack.apiUrl } });
  try {
    const pushedAt = new Map<string, number>();
    const latencies: number[] = [];
    client.on('slack_event', async (e: { ack: () => Promise<void>; body: { event?: { text?: string } } }) => {
      await e.ack();
      const text = e.body.event?.text ?? '';
      void kernel.queue.push({ task: text, source: 'chatD' }).then(() => latencies.push(performance.now() - pushedAt.get(text)!));
    });
    await client.start();
    const t = performance.now();
    await burst(slack, pushedAt);
    while (latencies.length < CHANNELS * PER_CHANNEL) await new Promise((r) => setTimeout(r, 2));
    const elapsed = (performance.now() - t) / 1000;
    return { p50: pct(latencies, 50), p99: pct(latencies, 99), perSecond: latencies.length / elapsed };
  } finally {
    await client.disconnect();
    await kernel.stop();
    await slack.close();
    rm(home);
    rm(builtins);
  }
}

/**
 * Outbound: the kit's path (mrkdwn render, ledger, limiter, per-channel order) against WebClient
 * chat.postMessage; the fake in its own process (`process`, the budget) or in this one (`inline`). See outbound.ts.
 */
async function outbound(n: number, where: 'process' | 'inline'): Promise<{ kit: number; bare: number }> {
  const fake =
    where === 'process'
      ? await hostFake<{ apiUrl: string; botToken: string }>('slack')
      : await startFakeSlack().then((sl) => ({ info: { apiUrl: sl.apiUrl, botToken: sl.botToken }, close: () => sl.close() }));
  const home = tmp('keel-bench-out-');
  const store = ChannelStore.open(home, 'chatD');
  const client = new WebClient(fake.info.botToken, {
    slackApiUrl: fake.info.apiUrl,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    logger: silentSlack,
  });
  // Limits wide open: the rate limiter's waits are a feature, not overhead; this measures the bookkeeping.
  const wide = { capacity: 1e9, perSecond: 1e9 };
  const outbox = new Outbox({
    ledger: new DeliveryLedger(store),
    limiter: new RateLimiter({ send: wide, edit: wide, global: wide }),
    classify: classifySlack,
    log: quiet,
  });
  const text = 'Here is **the answer** you asked for, with `code` and a [link](https://example.com).';
  try {
    return await interleaved(
      {
        kit: async (i) => {
          const chunks: SlackChunk[] = renderChunks(text, 'slack').map((t) => ({ kind: 'text', text: t }));
          await outbox.deliver(`bench:${i}`, channelOf(Math.abs(i) % 100), chunks, (c, _j, ch) => sendChunk(client, ch, c));
        },
        bare: (i) => client.chat.postMessage({ channel: channelOf(Math.abs(i) % 100), text }),
      },
      n,
    );
  } finally {
    store.close();
    await fake.close();
    rm(home);
  }
}

export async function benchSlack(): Promise<BenchRow[]> {
  const keel = await inboundKeel();
  const bare = await inboundBare();
  const out = await outbound(1000, 'process');
  const outInline = await outbound(1000, 'inline');
  const inboundPeer = 'bare SocketModeClient: ack at once + queue.push (no ingress record, no dedupe)';
  const load = `${CHANNELS} channels x ${PER_CHANNEL} at once`;
  return [
    {
      name: `chatD inbound → durable action p50 (${load})`,
      value: keel.p50,
      unit: 'ms',
      peer: inboundPeer,
      peerValue: bare.p50,
      budget: 'report',
      ok: true,
    },
    {
      name: `chatD inbound → durable action p99 (${load})`,
      value: keel.p99,
      unit: 'ms',
      peer: inboundPeer,
      peerValue: bare.p99,
      budget: 'report',
      ok: true,
    },
    {
      name: `chatD inbound throughput (${load})`,
      value: keel.perSecond,
      unit: 'msgs/s',
      peer: inboundPeer,
      peerValue: bare.perSecond,
      budget: 'report',
      ok: true,
    },
    {
      name: 'chatD outbound send through the kit (mrkdwn render + ledger + limiter + per-channel order), fake in its own process',
      value: out.kit,
      unit: 'ms/msg',
      peer: 'bare WebClient chat.postMessage, same fake',
      peerValue: out.bare,
      budget: '<= 1.5x peer (medians)',
      ok: out.kit <= 1.5 * out.bare,
    },
    {
      name: 'chatD outbound send through the kit, fake inside the measuring process',
      value: outInline.kit,
      unit: 'ms/msg',
      peer: 'bare WebClient chat.postMessage, same fake',
      peerValue: outInline.bare,
      budget: 'report',
      ok: true,
    },
  ];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printRows(await benchSlack());
}
