/**
 * Discord (issue 12): inbound message → durable action (chatC plugin: raw gateway dispatch → ingress record with
 * the history cursor → receive → durable queue push) against a bare discord.js client pushing each MESSAGE_CREATE
 * straight onto the queue; and the outbound send overhead of the kit (render, nonce, ledger, limiter, per-channel
 * order) against a bare discord.js REST `POST /channels/:id/messages` to the same loopback Discord. Each beside
 * its peer measured in the same run.
 *
 * Standalone: `npx tsx bench/discord.ts`.
 */
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { Client, GatewayIntentBits, Partials, REST } from 'discord.js';
import { startKernel } from '../kernel/kernel.js';
import { LogSink } from '../kernel/log.js';
import { ChannelStore, DeliveryLedger, Outbox, RateLimiter, renderChunks } from '../sdk/channel-kit/index.js';
import { classifyDiscord, type DcChunk, makeRest, nonceOf, sendChunk } from '../plugins/chatC/src/discord.js';
import { startFakeDiscord, type FakeDiscord } from '../test/fakes/discord-server.js';
import { rm, tmp } from '../test/helpers.js';
import { type BenchRow, printRows } from './lib.js';
import { hostFake, interleaved } from './outbound.js';

const quiet = { debug() {}, info() {}, warn() {}, error: (m: string) => console.error(m) };
const CHANNELS = 50;
const PER_CHANNEL = 4;
const channelIds = Array.from({ length: CHANNELS }, (_, i) => `3200000000000${String(10000 + i)}`);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

async function burst(
  dc: FakeDiscord,
  latencies: number[],
  pushedAt: Map<string, number>,
): Promise<{ p50: number; p99: number; perSecond: number }> {
  const t = performance.now();
  for (let m = 0; m < PER_CHANNEL; m++) {
    for (const [c, cid] of channelIds.entries()) {
      const text = `message ${m} in channel ${c}`;
      pushedAt.set(text, performance.now());
      dc.pushMessage(text, { channelId: cid, userId: `4500000000000${String(10000 + c)}` });
    }
  }
  while (latencies.length < CHANNELS * PER_CHANNEL) await new Promise((r) => setTimeout(r, 2));
  const elapsed = (performance.now() - t) / 1000;
  return { p50: pct(latencies, 50), p99: pct(latencies, 99), perSecond: latencies.length / elapsed };
}

async function inboundKeel(): Promise<{ p50: number; p99: number; perSecond: number }> {
  const home = tmp('keel-bench-chatc-');
  const builtins = tmp('keel-bench-builtins-');
  const dc = await startFakeDiscord();
  writeFileSync(
    join(home, 'keel.config.yaml'),
    JSON.stringify({ chatCToken: dc.token, chatCApiUrl: dc.apiUrl, chatCAutoReplyEnabled: true }),
  );
  const chatC = {
    id: 'chatC',
    origin: 'builtin' as const,
    dir: join(import.meta.dirname, '..', 'plugins', 'chatC'),
    manifest: (await import('../plugins/chatC/manifest.js')).default,
    load: async () => (await import('../plugins/chatC/index.js')).default,
  };
  const kernel = await startKernel({
    home,
    builtinDir: builtins,
    extraPlugins: [chatC],
    env: {},
    watchSkills: false,
    watchConfig: false,
    runAgent: false,
    logs: new LogSink({ quiet: true }),
  });
  try {
    const pushedAt = new Map<string, number>();
    const latencies: number[] = [];
    kernel.hooks.actionQueued.tapPromise('bench', async (a) => {
      const t0 = pushedAt.get(a.task);
      if (t0 !== undefined) latencies.push(performance.now() - t0);
    });
    while (!dc.commands.length) await new Promise((r) => setTimeout(r, 20)); // READY handled
    return await burst(dc, latencies, pushedAt);
  } finally {
    await kernel.stop();
    await dc.close();
    rm(home);
    rm(builtins);
  }
}

/** The peer: a bare discord.js client whose raw MESSAGE_CREATE goes straight onto the same kind of queue. */
async function inboundBare(): Promise<{ p50: number; p99: number; perSecond: number }> {
  const home = tmp('keel-bench-bare-');
  const builtins = tmp('keel-bench-builtins-');
  const dc = await startFakeDiscord();
  const kernel = await startKernel({
    home,
    builtinDir: builtins,
    env: {},
    watchSkills: false,
    watchConfig: false,
    runAgent: false,
    logs: new LogSink({ quiet: true }),
  });
  const client = new Client({
    rest: { api: dc.apiUrl },
    intents: [
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildMessages,
      GatewayIntentBits.MessageContent,
      GatewayIntentBits.DirectMessages,
    ],
    partials: [Partials.Channel],
  });
  try {
    const pushedAt = new Map<string, number>();
    const latencies: number[] = [];
    client.on('raw', (p: { t?: string; d?: { content?: string; author?: { bot?: boolean } } }) => {
      if (p.t !== 'MESSAGE_CREATE' || p.d?.author?.bot) return;
      const text = p.d?.content ?? '';
      void kernel.queue.push({ task: text, source: 'chatC' }).then(() => latencies.push(performance.now() - pushedAt.get(text)!));
    });
    const ready = new Promise((r) => client.once('clientReady', r));
    await client.login(dc.token);
    await ready;
    return await burst(dc, latencies, pushedAt);
  } finally {
    await client.destroy();
    await kernel.stop();
    await dc.close();
    rm(home);
    rm(builtins);
  }
}

/**
 * Outbound: the kit's path against a bare REST post of the same text to the same fake; the fake in its own
 * process (`process`, the budget) or in this one (`inline`, reported). See outbound.ts.
 */
async function outbound(n: number, where: 'process' | 'inline'): Promise<{ kit: number; bare: number }> {
  const fake =
    where === 'process'
      ? await hostFake<{ apiUrl: string; token: string }>('discord', channelIds)
      : await startFakeDiscord().then((dc) => {
          // The fake knows a channel once something was said in it.
          for (const cid of channelIds) dc.pushMessage('hello', { channelId: cid });
          return { info: { apiUrl: dc.apiUrl, token: dc.token }, close: () => dc.close() };
        });
  const home = tmp('keel-bench-dc-out-');
  const store = ChannelStore.open(home, 'chatC');
  const rest = makeRest(fake.info.token, fake.info.apiUrl);
  const bareRest = new REST({ api: fake.info.apiUrl, version: '10' }).setToken(fake.info.token);
  // Limits wide open: the rate limiter's waits are a feature, not overhead; this measures the bookkeeping.
  const wide = { capacity: 1e9, perSecond: 1e9 };
  const outbox = new Outbox({
    ledger: new DeliveryLedger(store),
    limiter: new RateLimiter({ send: wide, edit: wide, global: wide }),
    classify: classifyDiscord,
    log: quiet,
  });
  const text = 'Here is **the answer** you asked for, with `code` and a [link](https://example.com).';
  const channel = (i: number) => channelIds[Math.abs(i) % CHANNELS]!;
  try {
    return await interleaved(
      {
        kit: async (i) => {
          const key = `bench:${i}`;
          const chunks: DcChunk[] = renderChunks(text, 'discord', { limit: 2000 }).map((content, j) => ({
            kind: 'text',
            content,
            nonce: nonceOf(key, j),
          }));
          await outbox.deliver(key, channel(i), chunks, (c, _j, chat) => sendChunk(rest, chat, c));
        },
        bare: (i) => bareRest.post(`/channels/${channel(i)}/messages`, { body: { content: text } }),
      },
      n,
    );
  } finally {
    store.close();
    await fake.close();
    rm(home);
  }
}

export async function benchDiscord(): Promise<BenchRow[]> {
  const keel = await inboundKeel();
  const bare = await inboundBare();
  const out = await outbound(1000, 'process');
  const outInline = await outbound(1000, 'inline');
  const peer = 'bare discord.js raw MESSAGE_CREATE + queue.push (no ingress record, no dedupe)';
  const shape = `${CHANNELS} channels x ${PER_CHANNEL} at once`;
  return [
    {
      name: `chatC inbound → durable action p50 (${shape})`,
      value: keel.p50,
      unit: 'ms',
      peer,
      peerValue: bare.p50,
      budget: 'report',
      ok: true,
    },
    {
      name: `chatC inbound → durable action p99 (${shape})`,
      value: keel.p99,
      unit: 'ms',
      peer,
      peerValue: bare.p99,
      budget: 'report',
      ok: true,
    },
    {
      name: `chatC inbound throughput (${shape})`,
      value: keel.perSecond,
      unit: 'msgs/s',
      peer,
      peerValue: bare.perSecond,
      budget: 'report',
      ok: true,
    },
    {
      name: 'chatC outbound send through the kit (render + nonce + ledger + limiter + per-channel order), fake in its own process',
      value: out.kit,
      unit: 'ms/msg',
      peer: 'bare discord.js REST POST /channels/:id/messages, same fake',
      peerValue: out.bare,
      budget: '<= 1.5x peer (medians)',
      ok: out.kit <= 1.5 * out.bare,
    },
    {
      name: 'chatC outbound send through the kit, fake inside the measuring process',
      value: outInline.kit,
      unit: 'ms/msg',
      peer: 'bare discord.js REST POST /channels/:id/messages, same fake',
      peerValue: outInline.bare,
      budget: 'report',
      ok: true,
    },
  ];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printRows(await benchDiscord());
}
