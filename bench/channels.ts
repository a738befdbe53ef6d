/**
 * Channels (issue 11): inbound message → durable action with 100 chats sending at once, the outbound send overhead
 * of the kit against a bare grammy sendMessage to the same loopback Bot API, and render + chunk of a 20,000-character
 * reply. Each beside its peer measured in the same run.
 *
 * Standalone: `npx tsx bench/channels.ts`.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { marked } from 'marked';
import { startKernel } from '../kernel/kernel.js';
import { LogSink } from '../kernel/log.js';
import { ChannelStore, DeliveryLedger, Outbox, RateLimiter, renderTelegram } from '../sdk/channel-kit/index.js';
import { makeApi, sendChunk, classifyTelegram, type TgChunk } from '../plugins/chatA/src/telegram.js';
import { startFakeTelegram } from '../test/fakes/telegram-server.js';
import { rm, tmp } from '../test/helpers.js';
import { type BenchRow, median, printRows } from './lib.js';
import { hostFake, interleaved } from './outbound.js';

const quiet = { debug() {}, info() {}, warn() {}, error: (m: string) => console.error(m) };
const CHATS = 100;
const PER_CHAT = 5;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

/** Keel: updates → chatA plugin (ingress record + offset, receive, durable queue push). Latency from push to actionQueued. */
async function inboundKeel(): Promise<{ p50: number; p99: number; perSecond: number }> {
  const home = tmp('keel-bench-chata-');
  const builtins = tmp('keel-bench-builtins-');
  const tg = await startFakeTelegram();
  writeFileSync(
    join(home, 'keel.config.yaml'),
    JSON.stringify({ chatAToken: tg.token, chatAApiRoot: tg.apiRoot, chatAAutoReplyEnabled: true, chatAPollTimeout: 1 }),
  );
  const chatA = {
    id: 'chatA',
    origin: 'builtin' as const,
    dir: join(import.meta.dirname, '..', 'plugins', 'chatA'),
    manifest: (await import('../plugins/chatA/manifest.js')).default,
    load: async () => (await import('../plugins/chatA/index.js')).default,
  };
  const kernel = await startKernel({
    home,
    builtinDir: builtins,
    extraPlugins: [chatA],
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
      if (latencies.length === CHATS * PER_CHAT) done();
    });
    await new Promise((r) => setTimeout(r, 500)); // connected, first poll waiting
    const t = performance.now();
    for (let m = 0; m < PER_CHAT; m++) {
      for (let c = 0; c < CHATS; c++) {
        const text = `message ${m} from chat ${c}`;
        pushedAt.set(text, performance.now());
        tg.pushText(text, { userId: 10_000 + c });
      }
    }
    await all;
    const elapsed = (performance.now() - t) / 1000;
    return { p50: pct(latencies, 50), p99: pct(latencies, 99), perSecond: latencies.length / elapsed };
  } finally {
    await kernel.stop();
    await tg.close();
    rm(home);
    rm(builtins);
  }
}

/** The peer: a bare grammy getUpdates loop pushing each update straight onto the same kind of queue (no ingress). */
async function inboundBare(): Promise<{ p50: number; p99: number; perSecond: number }> {
  const home = tmp('keel-bench-bare-');
  const builtins = tmp('keel-bench-builtins-');
  const tg = await startFakeTelegram();
  const kernel = await startKernel({
    home,
    builtinDir: builtins,
    env: {},
    watchSkills: false,
    watchConfig: false,
    runAgent: false,
    logs: new LogSink({ quiet: true }),
  });
  const api = makeApi(tg.token, tg.apiRoot);
  const stop = new AbortController();
  try {
    const pushedAt = new Map<string, number>();
    const latencies: number[] = [];
    let offset = 0;
    const loop = (async () => {
      while (!stop.signal.aborted) {
        const ups = await api.getUpdates({ offset, timeout: 1 }, stop.signal as never).catch(() => []);
        for (const u of ups) {
          offset = u.update_id + 1;
          const text = u.message?.text ?? '';
          void kernel.queue.push({ task: text, source: 'chatA' }).then(() => latencies.push(performance.now() - pushedAt.get(text)!));
        }
      }
    })();
    await new Promise((r) => setTimeout(r, 300));
    const t = performance.now();
    for (let m = 0; m < PER_CHAT; m++) {
      for (let c = 0; c < CHATS; c++) {
        const text = `message ${m} from chat ${c}`;
        pushedAt.set(text, performance.now());
        tg.pushText(text, { userId: 10_000 + c });
      }
    }
    while (latencies.length < CHATS * PER_CHAT) await new Promise((r) => setTimeout(r, 2));
    const elapsed = (performance.now() - t) / 1000;
    stop.abort();
    await loop;
    return { p50: pct(latencies, 50), p99: pct(latencies, 99), perSecond: latencies.length / elapsed };
  } finally {
    await kernel.stop();
    await tg.close();
    rm(home);
    rm(builtins);
  }
}

/**
 * Outbound: the kit's path (render, ledger, limiter, per-chat order) against api.sendMessage, same fake, same
 * texts; the fake in its own process (`process`, the budget) or in this one (`inline`, reported). See outbound.ts.
 */
async function outbound(n: number, where: 'process' | 'inline'): Promise<{ kit: number; bare: number }> {
  const fake =
    where === 'process'
      ? await hostFake<{ apiRoot: string; token: string }>('telegram')
      : await startFakeTelegram().then((tg) => ({ info: { apiRoot: tg.apiRoot, token: tg.token }, close: () => tg.close() }));
  const home = tmp('keel-bench-out-');
  const store = ChannelStore.open(home, 'chatA');
  const api = makeApi(fake.info.token, fake.info.apiRoot);
  // Limits wide open: the rate limiter's waits are a feature, not overhead; this measures the bookkeeping.
  const wide = { capacity: 1e9, perSecond: 1e9 };
  const outbox = new Outbox({
    ledger: new DeliveryLedger(store),
    limiter: new RateLimiter({ send: wide, edit: wide, global: wide }),
    classify: classifyTelegram,
    log: quiet,
  });
  const text = 'Here is **the answer** you asked for, with `code` and a [link](https://example.com).';
  const chat = (i: number) => String(1000 + (Math.abs(i) % 100));
  try {
    return await interleaved(
      {
        kit: async (i) => {
          const chunks: TgChunk[] = renderTelegram(text).map((c) => ({ kind: 'text', ...c }));
          await outbox.deliver(`bench:${i}`, chat(i), chunks, (c, _j, to) => sendChunk(api, to, c));
        },
        bare: (i) => api.sendMessage(chat(i), text),
      },
      n,
    );
  } finally {
    store.close();
    await fake.close();
    rm(home);
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
  const out = await outbound(1000, 'process');
  const outInline = await outbound(1000, 'inline');
  const render = renderBench();
  const inboundPeer = 'bare grammy getUpdates loop + queue.push (no ingress record, no dedupe)';
  return [
    {
      name: `chatA inbound → durable action p50 (${CHATS} chats x ${PER_CHAT} at once)`,
      value: keel.p50,
      unit: 'ms',
      peer: inboundPeer,
      peerValue: bare.p50,
      budget: 'report',
      ok: true,
    },
    {
      name: `chatA inbound → durable action p99 (${CHATS} chats x ${PER_CHAT} at once)`,
      value: keel.p99,
      unit: 'ms',
      peer: inboundPeer,
      peerValue: bare.p99,
      budget: 'report',
      ok: true,
    },
    {
      name: `chatA inbound throughput (${CHATS} chats at once)`,
      value: keel.perSecond,
      unit: 'msgs/s',
      peer: inboundPeer,
      peerValue: bare.perSecond,
      budget: 'report',
      ok: true,
    },
    {
      name: 'chatA outbound send through the kit (render + ledger + limiter + per-chat order), fake in its own process',
      value: out.kit,
      unit: 'ms/msg',
      peer: 'bare grammy api.sendMessage, same fake',
      peerValue: out.bare,
      budget: '<= 1.5x peer (medians)',
      ok: out.kit <= 1.5 * out.bare,
    },
    {
      name: 'chatA outbound send through the kit, fake inside the measuring process',
      value: outInline.kit,
      unit: 'ms/msg',
      peer: 'bare grammy api.sendMessage, same fake',
      peerValue: outInline.bare,
      budget: 'report',
      ok: true,
    },
    {
      name: `render + chunk of a 20,000-character reply for Telegram (${render.chunks} chunks)`,
      value: render.render,
      unit: 'ms',
      peer: 'marked.parse to HTML (no chunking)',
      peerValue: render.parse,
      budget: 'report',
      ok: true,
    },
  ];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  printRows(await benchChannels());
}
