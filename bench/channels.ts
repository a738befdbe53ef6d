/**
 * Channels (issue 11): inbound message → durable action with 100 chats sending at once, the outbound send overhead
 * of the kit against a bare grammy sendMessage to the same loopback Bot API, and render + chunk of a 20,000-character
 * reply. Each beside its peer measured in the same run.
 *
 * Standalone: `npx tsx bench/channels.ts`.
 */
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { marked } from 'marked';
import { renderTelegram } from '../sdk/channel-kit/index.js';
import { makeApi, sendChunk, classifyTelegram, type TgChunk } from '../plugins/chatA/src/telegram.js';
import { startFakeTelegram } from '../test/fakes/telegram-server.js';

import { type BenchRow, median, printRows } from './lib.js';
import {
  type OutboundFigures,
  benchKernel,
  hostFake,
  InboundClock,
  type InboundFigures,
  channelRows,
  inRounds,
  interleaved,
  OUTBOUND_ROUNDS,
  LONG_REPLY,
  REPLY_TEXT,
  benchOutbox,
  fakeCostRow,
} from './channel-bench.js';

const CHATS = 100;
const PER_CHAT = 5;
const message = (i: number) => `message ${Math.floor(i / CHATS)} from chat ${i % CHATS}`;

/** Keel: updates → chatA plugin (ingress record + offset, receive, durable queue push). Latency from push to actionQueued. */
async function inboundKeel(): Promise<InboundFigures> {
  const tg = await startFakeTelegram();
  const k = await benchKernel('chatA', {
    chatAToken: tg.token,
    chatAApiRoot: tg.apiRoot,
    chatAAutoReplyEnabled: true,
    chatAPollTimeout: 1,
  });
  try {
    const clock = new InboundClock().tapQueued(k.kernel);
    await new Promise((r) => setTimeout(r, 500)); // connected, first poll waiting
    return await clock.burst(CHATS * PER_CHAT, (i) => (tg.pushText(message(i), { userId: 10_000 + (i % CHATS) }), message(i)));
  } finally {
    await k.close();
    await tg.close();
  }
}

/** The peer: a bare grammy getUpdates loop pushing each update straight onto the same kind of queue (no ingress). */
async function inboundBare(): Promise<InboundFigures> {
  const tg = await startFakeTelegram();
  const k = await benchKernel();
  const api = makeApi(tg.token, tg.apiRoot);
  const stop = new AbortController();
  const clock = new InboundClock();
  let offset = 0;
  const loop = (async () => {
    while (!stop.signal.aborted) {
      const ups = await api.getUpdates({ offset, timeout: 1 }, stop.signal as never).catch(() => []);
      for (const u of ups) {
        offset = u.update_id + 1;
        const t = u.message?.text ?? '';
        void k.kernel.queue.push({ task: t, source: 'chatA' }).then(() => clock.done(t));
      }
    }
  })();
  try {
    await new Promise((r) => setTimeout(r, 300));
    return await clock.burst(CHATS * PER_CHAT, (i) => (tg.pushText(message(i), { userId: 10_000 + (i % CHATS) }), message(i)));
  } finally {
    stop.abort();
    await loop;
    await k.close();
    await tg.close();
  }
}

/**
 * Outbound: the kit's path (render, ledger, limiter, per-chat order) against api.sendMessage, same fake, same
 * texts; the fake in its own process (`process`, the budget) or in this one (`inline`, reported). See outbound.ts.
 */
async function outbound(n: number, where: 'process' | 'inline', text = REPLY_TEXT, round = 0): Promise<OutboundFigures> {
  const fake =
    where === 'process'
      ? await hostFake<{ apiRoot: string; token: string }>('telegram')
      : await startFakeTelegram().then((tg) => ({ info: { apiRoot: tg.apiRoot, token: tg.token }, close: () => tg.close() }));
  const kit = benchOutbox('chatA', classifyTelegram);
  const api = makeApi(fake.info.token, fake.info.apiRoot);
  const first = where === 'process' && text === REPLY_TEXT;
  const chat = (i: number) => String(1000 + (Math.abs(i) % 100));
  const [rendered] = renderTelegram(text);
  if (!rendered) throw new Error('nothing rendered');
  try {
    return await interleaved(
      {
        kit: async (i) => {
          const chunks: TgChunk[] = renderTelegram(text).map((c) => ({ kind: 'text', ...c }));
          await kit.outbox.deliver(`bench:${i}`, chat(i), chunks, (c, _j, to) => sendChunk(api, to, c));
        },
        bare: (i) => api.sendMessage(chat(i), rendered.html, { parse_mode: 'HTML', link_preview_options: { is_disabled: true } }),
        ...(first ? { raw: (i: number) => api.sendMessage(chat(i), text) } : {}),
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

function renderBench(): { render: number; parse: number; chunks: number } {
  const block = [
    '## Findings',
    'The **quick** brown fox _jumps_ over the `lazy` dog; see [the docs](https://example.com/docs?a=1&b=2).',
    '- first point with some words\n- second point with `code`\n- third point',
    '```ts\nconst answer = items.filter((x) => x.score > 0.5).map((x) => x.id);\nconsole.log(answer);\n```',
    '| name | value |\n| --- | --- |\n| alpha | 1 |\n| beta | 2 |',
    '> a quoted remark that goes on for a while to make the paragraph longer than a line',
  ].join('\n\n');
  let md = '';
  while (md.length < 20_000) md += `${block}\n\n`;
  md = md.slice(0, 20_000);
  let chunks = 0;
  const r: number[] = [];
  const p: number[] = [];
  for (let i = 0; i < 30; i++) {
    let t = performance.now();
    chunks = renderTelegram(md).length;
    r.push(performance.now() - t);
    t = performance.now();
    marked.parse(md, { async: false });
    p.push(performance.now() - t);
  }
  return { render: median(r.slice(5)), parse: median(p.slice(5)), chunks };
}

export async function benchChannels(): Promise<BenchRow[]> {
  const keel = await inboundKeel();
  const bare = await inboundBare();
  const out = await inRounds(OUTBOUND_ROUNDS, (r) => outbound(600, 'process', REPLY_TEXT, r));
  const outInline = await outbound(1000, 'inline');
  const outLong = await outbound(1000, 'process', LONG_REPLY);
  const render = renderBench();
  const fakeCost = await fakeCostRow<{ apiRoot: string; token: string }>({
    channel: 'chatA',
    kind: 'telegram',
    request: (info, i) => ({
      url: `${info.apiRoot}/bot${info.token}/sendMessage`,
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ chat_id: String(1000 + (Math.abs(i) % 100)), text: REPLY_TEXT }),
    }),
  });
  return [
    ...channelRows({
      channel: 'chatA',
      load: `${CHATS} chats x ${PER_CHAT} at once`,
      inboundPeer: 'bare grammy getUpdates loop + queue.push (no ingress record, no dedupe)',
      keel,
      bare,
      outboundWhat: 'render + ledger + limiter + per-chat order',
      outboundPeer: 'bare grammy api.sendMessage, same fake',
      out,
      outInline,
      outLong,
    }),
    {
      name: `render + chunk of a 20,000-character reply for Telegram (${render.chunks} chunks)`,
      value: render.render,
      unit: 'ms',
      peer: 'marked.parse to HTML (no chunking)',
      peerValue: render.parse,
      budget: 'report',
      ok: true,
    },
    fakeCost,
  ];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printRows(await benchChannels());
}
