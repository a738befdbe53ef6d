/**
 * Discord (issue 12): inbound message → durable action (chatC plugin: raw gateway dispatch → ingress record with
 * the history cursor → receive → durable queue push) against a bare discord.js client pushing each MESSAGE_CREATE
 * straight onto the queue; and the outbound send overhead of the kit (render, nonce, ledger, limiter, per-channel
 * order) against a bare discord.js REST `POST /channels/:id/messages` to the same loopback Discord. Each beside
 * its peer measured in the same run.
 *
 * Standalone: `npx tsx bench/discord.ts`.
 */
import { pathToFileURL } from 'node:url';
import { Client, GatewayIntentBits, Partials, REST, type TextChannel } from 'discord.js';
import { platformNonce, renderChunks } from '../sdk/channel-kit/index.js';
import { classifyDiscord, type DcChunk, makeRest, sendChunkTo } from '../plugins/chatC/src/discord.js';
import { startFakeDiscord, type FakeDiscord } from '../test/fakes/discord-server.js';

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

const CHANNELS = 50;
const PER_CHANNEL = 4;
const channelIds = Array.from({ length: CHANNELS }, (_, i) => `3200000000000${String(10000 + i)}`);
const message = (i: number) => `message ${Math.floor(i / CHANNELS)} in channel ${i % CHANNELS}`;
const push = (dc: FakeDiscord) => (i: number) => {
  dc.pushMessage(message(i), { channelId: channelIds[i % CHANNELS]!, userId: `4500000000000${String(10000 + (i % CHANNELS))}` });
  return message(i);
};

async function inboundKeel(): Promise<InboundFigures> {
  const dc = await startFakeDiscord();
  const k = await benchKernel('chatC', { chatCToken: dc.token, chatCApiUrl: dc.apiUrl, chatCAutoReplyEnabled: true });
  try {
    const clock = new InboundClock().tapQueued(k.kernel);
    while (!dc.commands.length) await new Promise((r) => setTimeout(r, 20)); // READY handled
    return await clock.burst(CHANNELS * PER_CHANNEL, push(dc));
  } finally {
    await k.close();
    await dc.close();
  }
}

/** The peer: a bare discord.js client whose raw MESSAGE_CREATE goes straight onto the same kind of queue. */
async function inboundBare(): Promise<InboundFigures> {
  const dc = await startFakeDiscord();
  const k = await benchKernel();
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
    const clock = new InboundClock();
    client.on('raw', (p: { t?: string; d?: { content?: string; author?: { bot?: boolean } } }) => {
      if (p.t !== 'MESSAGE_CREATE' || p.d?.author?.bot) return;
      const text = p.d?.content ?? '';
      void k.kernel.queue.push({ task: text, source: 'chatC' }).then(() => clock.done(text));
    });
    const ready = new Promise((r) => client.once('clientReady', r));
    await client.login(dc.token);
    await ready;
    return await clock.burst(CHANNELS * PER_CHANNEL, push(dc));
  } finally {
    await client.destroy();
    await k.close();
    await dc.close();
  }
}

/**
 * Outbound: the kit's path against a bare REST post of the same text to the same fake; the fake in its own
 * process (`process`, the budget) or in this one (`inline`, reported). See outbound.ts.
 */
async function outbound(n: number, where: 'process' | 'inline', text = REPLY_TEXT, round = 0): Promise<OutboundFigures> {
  const fake =
    where === 'process'
      ? await hostFake<{ apiUrl: string; token: string }>('discord', channelIds)
      : await startFakeDiscord().then((dc) => {
          // The fake knows a channel once something was said in it.
          for (const cid of channelIds) dc.pushMessage('hello', { channelId: cid });
          return { info: { apiUrl: dc.apiUrl, token: dc.token }, close: () => dc.close() };
        });
  const kit = benchOutbox('chatC', classifyDiscord);
  // discord.js caps each client at Discord's 50 requests/s by sleeping; at a thousand sends a second both sides
  // would time mostly those sleeps (and run cold after each). Opened on both, as the kit's own limiter is.
  const open = { globalRequestsPerSecond: 1e9 };
  const rest = makeRest(fake.info.token, fake.info.apiUrl, open);
  const bareRest = new REST({ api: fake.info.apiUrl, version: '10', ...open }).setToken(fake.info.token);
  const first = where === 'process' && text === REPLY_TEXT;
  const content = renderChunks(text, 'discord', { limit: 2000 })[0]!;
  const channel = (i: number) => channelIds[Math.abs(i) % CHANNELS]!;
  const dms = new Map<string, string>();
  // The library's own send: a logged-in client (Guilds intent only, so the fake sends it no MESSAGE_CREATE echoes
  // that would land inside the other sides' timings), its cached channel's send().
  const client = first ? await loggedIn(fake.info, open) : undefined;
  try {
    return await interleaved(
      {
        kit: async (i) => {
          const key = `bench:${i}`;
          const chunks: DcChunk[] = renderChunks(text, 'discord', { limit: 2000 }).map((content, j) => ({
            kind: 'text',
            content,
            nonce: platformNonce(key, j),
          }));
          // The plugin's sender (a user id is turned into a direct-message channel on the first "Unknown Channel").
          await kit.outbox.deliver(key, channel(i), chunks, (c, _j, chat) => sendChunkTo(rest, chat, c, dms));
        },
        // Same fields as the kit's request; a nonce unique per call (the kit derives its own from the ledger key).
        bare: (i) =>
          bareRest.post(`/channels/${channel(i)}/messages`, {
            body: { content, nonce: `b${where[0]}${i}`, enforce_nonce: true, allowed_mentions: { parse: ['users'], replied_user: true } },
          }),
        ...(first ? { raw: (i: number) => bareRest.post(`/channels/${channel(i)}/messages`, { body: { content: text } }) } : {}),
        ...(client
          ? {
              idiom: (i: number) =>
                (client.channels.cache.get(channel(i)) as TextChannel).send({
                  content,
                  nonce: `i${i}`,
                  enforceNonce: true,
                  allowedMentions: { parse: ['users'], repliedUser: true },
                }),
            }
          : {}),
      },
      n,
      100,
      { regimes: first && round === 0 },
    );
  } finally {
    await client?.destroy();
    kit.close();
    await fake.close();
  }
}

/** A discord.js client logged in to the fake with the Guilds intent only, its channels cached (GUILD_CREATE). */
async function loggedIn(info: { apiUrl: string; token: string }, rest: { globalRequestsPerSecond: number }): Promise<Client> {
  const client = new Client({ rest: { api: info.apiUrl, ...rest }, intents: [GatewayIntentBits.Guilds] });
  const ready = new Promise((r) => client.once('clientReady', r));
  await client.login(info.token);
  await ready;
  return client;
}

export async function benchDiscord(): Promise<BenchRow[]> {
  const keel = await inboundKeel();
  const bare = await inboundBare();
  const out = await inRounds(OUTBOUND_ROUNDS, (r) => outbound(600, 'process', REPLY_TEXT, r));
  const outInline = await outbound(1000, 'inline');
  const outLong = await outbound(1000, 'process', LONG_REPLY);
  const fakeCost = await fakeCostRow<{ apiUrl: string; token: string }>({
    channel: 'chatC',
    kind: 'discord',
    args: channelIds,
    request: (info, i) => ({
      url: `${info.apiUrl}/v10/channels/${channelIds[Math.abs(i) % CHANNELS]}/messages`,
      method: 'POST',
      headers: { authorization: `Bot ${info.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ content: REPLY_TEXT, nonce: `f${i}`, enforce_nonce: true, allowed_mentions: { parse: ['users'] } }),
    }),
  });
  const rows = channelRows({
    channel: 'chatC',
    load: `${CHANNELS} channels x ${PER_CHANNEL} at once`,
    inboundPeer: 'bare discord.js raw MESSAGE_CREATE + queue.push (no ingress record, no dedupe)',
    keel,
    bare,
    outboundWhat: 'render + nonce + ledger + limiter + per-channel order',
    outboundPeer: 'bare discord.js REST POST /channels/:id/messages, same fake',
    idiomPeer: 'bare discord.js TextChannel.send on a logged-in client (what a discord.js bot calls), same fake',
    out,
    outInline,
    outLong,
  });
  return [...rows, fakeCost];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printRows(await benchDiscord());
}
