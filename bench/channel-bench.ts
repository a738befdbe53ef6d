/**
 * What the channel benches (chatA, chatC, chatD) share: a kernel with one channel plugin, an inbound burst timed
 * from push to durable action, and the outbound-overhead method.
 *
 * Outbound: the kit's send (render, ledger, limiter, per-chat order) against the bare library call to the same
 * fake, one message each in turn, which goes first alternating, median of each. Run twice:
 *
 * - `process`: the fake in a process of its own, as the real platform is: Keel's process runs only Keel's and the
 *   client library's code. This is the figure the 1.5x budget applies to.
 * - `inline`: the fake in Keel's own process (the tests' arrangement), reported beside it. Its server work shares
 *   the thread and the CPU caches with the code measured, which adds to whichever side runs code the other does
 *   not (the Markdown parse above all), so it overstates the kit's share.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request as httpRequest } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { type Kernel, startKernel } from '../kernel/kernel.js';
import { LogSink } from '../kernel/log.js';
import { ChannelStore, DeliveryLedger, Outbox, RateLimiter, type SendErrorDecision } from '../sdk/channel-kit/index.js';
import { rm, tmp } from '../test/helpers.js';
import { type BenchRow, median } from './lib.js';

/** The reply every outbound figure sends: one line, with the Markdown an agent uses most. */
export const REPLY_TEXT = 'Here is **the answer** you asked for, with `code` and a [link](https://example.com).';

/** A longer reply (reported): heading, paragraphs, a list and a code block, one message on every platform. */
export const LONG_REPLY = [
  '## What I found',
  'The build fails since **yesterday**: the `lint` step rejects two files, and the [CI log](https://example.com/ci/123) shows the same error on every run.',
  '- `src/app.ts`: an unused import\n- `src/util.ts`: a missing return type\n- the test suite itself passes',
  '```ts\nexport function add(a: number, b: number): number {\n  return a + b;\n}\n```',
  'I can fix both and open a pull request, or leave them to you. _Tell me which._',
].join('\n\n');

export const quiet = { debug() {}, info() {}, warn() {}, error: (m: string) => console.error(m) };

export interface InboundFigures {
  p50: number;
  p99: number;
  perSecond: number;
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

/**
 * A kernel without the agent, with channel `plugin` (from plugins/<plugin>) configured by `config`, or with no
 * channel at all (the bare peers push onto its queue themselves).
 */
export async function benchKernel(plugin?: 'chatA' | 'chatB' | 'chatC' | 'chatD', config: Record<string, unknown> = {}) {
  const home = tmp('keel-bench-home-');
  const builtins = tmp('keel-bench-builtins-');
  writeFileSync(join(home, 'keel.config.yaml'), JSON.stringify(config));
  const extra = plugin
    ? [
        {
          id: plugin,
          origin: 'builtin' as const,
          dir: join(import.meta.dirname, '..', 'plugins', plugin),
          manifest: (await import(`../plugins/${plugin}/manifest.js`)).default,
          load: async () => (await import(`../plugins/${plugin}/index.js`)).default,
        },
      ]
    : [];
  const kernel: Kernel = await startKernel({
    home,
    builtinDir: builtins,
    extraPlugins: extra,
    env: {},
    watchSkills: false,
    watchConfig: false,
    runAgent: false,
    logs: new LogSink({ quiet: true }),
  });
  return {
    kernel,
    async close() {
      await kernel.stop();
      rm(home);
      rm(builtins);
    },
  };
}

/**
 * Times a burst of `total` inbound messages: `push(i)` makes message i arrive at the fake and returns its text;
 * a message counts as done when `clock.done(text)` is called (Keel: the action is queued; a bare peer: its push
 * resolved).
 */
export class InboundClock {
  private readonly pushedAt = new Map<string, number>();
  private readonly latencies: number[] = [];

  done(text: string): void {
    const t0 = this.pushedAt.get(text);
    if (t0 !== undefined) this.latencies.push(performance.now() - t0);
  }

  /** Done when the kernel queues an action whose task is the text (Keel's side). */
  tapQueued(kernel: Kernel): this {
    kernel.hooks.actionQueued.tapPromise('bench', async (a) => this.done(a.task));
    return this;
  }

  async burst(total: number, push: (i: number) => string): Promise<InboundFigures> {
    const t = performance.now();
    for (let i = 0; i < total; i++) this.pushedAt.set(push(i), performance.now());
    while (this.latencies.length < total) await new Promise((r) => setTimeout(r, 2));
    const elapsed = (performance.now() - t) / 1000;
    return { p50: pct(this.latencies, 50), p99: pct(this.latencies, 99), perSecond: this.latencies.length / elapsed };
  }
}

/** The rows every channel bench prints: inbound p50, p99, throughput (reported), outbound (budget) and inline. */
export function channelRows(o: {
  channel: string;
  load: string;
  inboundPeer: string;
  keel: InboundFigures;
  bare: InboundFigures;
  outboundWhat: string;
  outboundPeer: string;
  /** What `out.idiom` measured (the library's own send; see OutboundPair.idiom). */
  idiomPeer?: string;
  out: OutboundFigures;
  outInline: OutboundFigures;
  /** The same with LONG_REPLY (reported). */
  outLong?: OutboundFigures;
}): BenchRow[] {
  const report = (name: string, value: number, peerValue: number, unit: string): BenchRow => ({
    name,
    value,
    unit,
    peer: o.inboundPeer,
    peerValue,
    budget: 'report',
    ok: true,
  });
  return [
    report(`${o.channel} inbound → durable action p50 (${o.load})`, o.keel.p50, o.bare.p50, 'ms'),
    report(`${o.channel} inbound → durable action p99 (${o.load})`, o.keel.p99, o.bare.p99, 'ms'),
    report(`${o.channel} inbound throughput (${o.load})`, o.keel.perSecond, o.bare.perSecond, 'msgs/s'),
    {
      name: `${o.channel} outbound send through the kit (${o.outboundWhat}), fake in its own process${roundsNote(o.out)}`,
      value: o.out.kit,
      unit: 'ms/msg',
      peer: `${o.outboundPeer} sending the same request (same fields, text rendered once beforehand)`,
      peerValue: o.out.bare,
      budget: '<= 1.5x peer (medians)',
      ok: o.out.kit <= 1.5 * o.out.bare,
    },
    ...(o.out.raw !== undefined
      ? [
          {
            name: `${o.channel} outbound send through the kit, fake in its own process, against the raw text`,
            value: o.out.kit,
            unit: 'ms/msg',
            peer: `${o.outboundPeer} with the Markdown as it is and no options`,
            peerValue: o.out.raw,
            budget: 'report',
            ok: true,
          },
        ]
      : []),
    ...(o.out.idiom !== undefined && o.idiomPeer
      ? [
          {
            name: `${o.channel} outbound send through the kit, fake in its own process, against the library's own send`,
            value: o.out.kit,
            unit: 'ms/msg',
            peer: `${o.idiomPeer}, same fields`,
            peerValue: o.out.idiom,
            budget: 'report',
            ok: true,
          },
        ]
      : []),
    ...(['stream', 'cold'] as const).flatMap((regime) => {
      const r = o.out[regime];
      if (!r) return [];
      const what = regime === 'stream' ? 'as a stream (blocks of 50 sends per side)' : 'cold (caches flushed before every send)';
      return [
        {
          name: `${o.channel} outbound send through the kit, fake in its own process, ${what}`,
          value: r.kit,
          unit: 'ms/msg',
          peer: `${o.outboundPeer} sending the same request, same regime`,
          peerValue: r.bare,
          budget: 'report',
          ok: true,
        },
      ];
    }),
    ...(o.outLong
      ? [
          {
            name: `${o.channel} outbound send through the kit, fake in its own process, a ${LONG_REPLY.length}-character reply (heading, list, code block)`,
            value: o.outLong.kit,
            unit: 'ms/msg',
            peer: `${o.outboundPeer} sending the same request`,
            peerValue: o.outLong.bare,
            budget: 'report',
            ok: true,
          },
        ]
      : []),
    {
      name: `${o.channel} outbound send through the kit, fake inside the measuring process`,
      value: o.outInline.kit,
      unit: 'ms/msg',
      peer: `${o.outboundPeer} sending the same request`,
      peerValue: o.outInline.bare,
      budget: 'report',
      ok: true,
    },
  ];
}

/** `, median of 5 rounds (ratios 1.38-1.47), the kit adds 0.180 ms a send` for a figure from `inRounds`. */
function roundsNote(f: OutboundFigures): string {
  if (!f.rounds) return '';
  const r = f.rounds.ratios;
  return `, median of ${r.length} rounds (ratios ${Math.min(...r).toFixed(2)}-${Math.max(...r).toFixed(2)}), the kit adds ${f.rounds.addedMs.toFixed(3)} ms a send`;
}

export interface OutboundPair {
  /** Keel's send: render, ledger, limiter, per-chat order, the platform call. */
  kit(i: number): Promise<unknown>;
  /** The bare library call sending the same request the kit sends (same fields, same rendered text): the peer. */
  bare(i: number): Promise<unknown>;
  /** The bare library call with the raw text and no options (reported beside it). */
  raw?(i: number): Promise<unknown>;
  /**
   * The call a bot written with the library alone makes, where that is not `bare` (discord.js: `TextChannel.send`
   * on a logged-in client, against the REST post of `bare`), with the same fields (reported beside it).
   */
  idiom?(i: number): Promise<unknown>;
}

export interface OutboundFigures {
  kit: number;
  bare: number;
  raw?: number;
  idiom?: number;
  /** Kit and bare in the two other cache regimes (see `regimes`), reported beside the budget's figure. */
  stream?: { kit: number; bare: number };
  cold?: { kit: number; bare: number };
  /** Set by `inRounds`: each round's kit/bare ratio, and the median of what the kit added per send (ms). */
  rounds?: { ratios: number[]; addedMs: number };
}

/** Rounds of the budget figure (each against a fresh fake process and a fresh store). */
export const OUTBOUND_ROUNDS = 5;

/**
 * The budget's figure: `rounds` runs of `measure` (round `r`), each against a fresh fake process, kit store and
 * client, and the medians of their medians. On a virtual machine the bare call alone moves by up to 2x from one
 * run to the next (how long a loopback request takes to wake the other process), while what the kit adds per send
 * moves far less; one run of 1,000 sends showed that as a ratio flipping either side of the budget from one run to
 * the next. The other regimes (`stream`, `cold`) come from round 0.
 */
export async function inRounds(rounds: number, measure: (round: number) => Promise<OutboundFigures>): Promise<OutboundFigures> {
  const all: OutboundFigures[] = [];
  for (let r = 0; r < rounds; r++) all.push(await measure(r));
  const raws = all.flatMap((f) => (f.raw === undefined ? [] : [f.raw]));
  const idioms = all.flatMap((f) => (f.idiom === undefined ? [] : [f.idiom]));
  return {
    ...all[0]!,
    kit: median(all.map((f) => f.kit)),
    bare: median(all.map((f) => f.bare)),
    ...(raws.length ? { raw: median(raws) } : {}),
    ...(idioms.length ? { idiom: median(idioms) } : {}),
    rounds: { ratios: all.map((f) => f.kit / f.bare), addedMs: median(all.map((f) => f.kit - f.bare)) },
  };
}

/**
 * Medians (ms) of `n` interleaved sends each, after `warm` unmeasured ones; which goes first rotates. With
 * `regimes`, kit and bare are also measured as a stream and cold (see `regimes`), on keys of their own.
 */
export async function interleaved(p: OutboundPair, n: number, warm = 100, o: { regimes?: boolean } = {}): Promise<OutboundFigures> {
  const sides = [
    { f: p.kit, runs: [] as number[] },
    { f: p.bare, runs: [] as number[] },
    ...(p.raw ? [{ f: p.raw, runs: [] as number[], name: 'raw' }] : []),
    ...(p.idiom ? [{ f: p.idiom, runs: [] as number[], name: 'idiom' }] : []),
  ];
  for (let i = 0; i < warm; i++) for (const s of sides) await s.f(-1 - i);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < sides.length; j++) {
      const s = sides[(i + j) % sides.length]!;
      const t = performance.now();
      await s.f(i);
      s.runs.push(performance.now() - t);
      // What a side leaves for the end of the turn (the ledger's marks, written behind) runs here, outside every
      // timing, instead of inside the next side's network wait.
      await endOfTurn();
    }
  }
  const [kit, bare] = sides.map((s) => median(s.runs));
  const extra = Object.fromEntries(sides.slice(2).map((s) => [(s as { name: string }).name, median(s.runs)]));
  return { kit: kit!, bare: bare!, ...extra, ...(o.regimes ? await regimes(p, n) : {}) };
}

const endOfTurn = () => new Promise((r) => setImmediate(r));

/**
 * The same pair in the two regimes around the interleaved one, because the ratio depends on how warm the CPU
 * caches are when a send starts, while the kit's absolute overhead moves much less:
 * - `stream`: blocks of 50 sends of one side, the blocks alternating (a busy channel; each side keeps its own
 *   path warm, and the kit's deferred work lands on the kit's next send, never on the peer's);
 * - `cold`: 8 MiB of memory written after every send, outside the timing (more than this machine's 2 MiB L2), so
 *   every send of both sides starts with cold caches, as a reply does after the agent's own work.
 * Keys and nonces are offset so that no send repeats an earlier one.
 */
async function regimes(p: OutboundPair, n: number): Promise<Pick<OutboundFigures, 'stream' | 'cold'>> {
  const block = 50;
  const stream = [[], []] as [number[], number[]];
  for (let b = 0; b * block < n; b++) {
    for (let j = 0; j < 2; j++) {
      const kit = (b + j) % 2 === 0;
      for (let k = 0; k < block; k++) {
        const t = performance.now();
        await (kit ? p.kit : p.bare)(1_000_000 + b * block + k);
        (kit ? stream[0] : stream[1]).push(performance.now() - t);
        await endOfTurn();
      }
    }
  }
  const scrub = new Uint8Array(8 << 20);
  const cold = [[], []] as [number[], number[]];
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < 2; j++) {
      const kit = (i + j) % 2 === 0;
      const t = performance.now();
      await (kit ? p.kit : p.bare)(2_000_000 + i);
      (kit ? cold[0] : cold[1]).push(performance.now() - t);
      await endOfTurn();
      for (let k = 0; k < scrub.length; k += 64) scrub[k]! ^= 1;
    }
  }
  return {
    stream: { kit: median(stream[0]), bare: median(stream[1]) },
    cold: { kit: median(cold[0]), bare: median(cold[1]) },
  };
}

export type FakeKind = 'telegram' | 'slack' | 'discord' | 'whatsapp' | 'minimal';

/**
 * What a fake itself costs per send request: the channel's send request (plain `node:http`, one kept-alive socket, no
 * client library) to the fake and to a minimal `node:http` server that answers the fake's own reply bytes, each in a
 * process of its own, interleaved, medians of `n`. Anything slow in a fake's request path lengthens both sides of
 * every outbound ratio, and so flatters the kit; this row shows how much the fake adds over answering at all.
 */
export async function fakeCostRow<I>(o: {
  channel: string;
  kind: Exclude<FakeKind, 'minimal'>;
  args?: string[];
  /** The send request for the i-th call (a fresh nonce or text each time). */
  request(info: I, i: number): { url: string; method: string; headers: Record<string, string>; body: string };
  n?: number;
}): Promise<BenchRow> {
  const n = o.n ?? 1000;
  const fake = await hostFake<I>(o.kind, o.args ?? []);
  let minimal: HostedFake<{ url: string }> | undefined;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const send = (url: string, r: { method: string; headers: Record<string, string>; body: string }) =>
    new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
      const req = httpRequest(
        url,
        { method: r.method, headers: { ...r.headers, 'content-length': Buffer.byteLength(r.body) }, agent },
        (res) => {
          const parts: Buffer[] = [];
          res.on('data', (d: Buffer) => parts.push(d));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              type: String(res.headers['content-type'] ?? ''),
              body: Buffer.concat(parts).toString('utf8'),
            }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(r.body);
    });
  try {
    const first = o.request(fake.info, -1);
    const answer = await send(first.url, first);
    if (answer.status !== 200)
      throw new Error(`the fake ${o.kind} refused the bench's send request (${answer.status}): ${answer.body.slice(0, 200)}`);
    minimal = await hostFake<{ url: string }>('minimal', [answer.body, answer.type || 'application/json']);
    const path = new URL(first.url).pathname;
    const call = async (which: 'fake' | 'minimal', i: number) => {
      const r = o.request(fake.info, i);
      const u = new URL(r.url);
      const res = await send(which === 'fake' ? r.url : `${minimal!.info.url}${u.pathname}${u.search}`, r);
      if (res.status !== 200) throw new Error(`${which} answered ${res.status} to ${path}`);
    };
    for (let i = 0; i < 100; i++) {
      await call('fake', -2 - i);
      await call('minimal', -2 - i);
    }
    const runs = { fake: [] as number[], minimal: [] as number[] };
    for (let i = 0; i < n; i++) {
      for (const which of i % 2 ? (['fake', 'minimal'] as const) : (['minimal', 'fake'] as const)) {
        const t = performance.now();
        await call(which, i);
        runs[which].push(performance.now() - t);
      }
    }
    return {
      name: `${o.channel} the fake's own cost: its send request (${first.method} ${path.replace(/\d{5,}/g, ':id').replace(/\/bot[^/]+\//, '/bot<token>/')}, plain node:http), fake in its own process`,
      value: median(runs.fake),
      unit: 'ms/req',
      peer: "a minimal node:http server in its own process answering the fake's reply bytes, same requests",
      peerValue: median(runs.minimal),
      budget: 'report',
      ok: true,
    };
  } finally {
    agent.destroy();
    await minimal?.close();
    await fake.close();
  }
}

/**
 * The kit's outbound path for `channel` on a fresh store, limits wide open: the rate limiter's waits are a feature,
 * not overhead; this measures the bookkeeping.
 */
export function benchOutbox(channel: string, classify: (e: unknown) => SendErrorDecision) {
  const home = tmp('keel-bench-out-');
  const store = ChannelStore.open(home, channel);
  const wide = { capacity: 1e9, perSecond: 1e9 };
  const outbox = new Outbox({
    ledger: new DeliveryLedger(store),
    limiter: new RateLimiter({ send: wide, edit: wide, global: wide }),
    classify,
    log: quiet,
  });
  return {
    outbox,
    close() {
      store.close();
      rm(home);
    },
  };
}

/** A fake running in a child process; `info` is what it printed (URLs, tokens). */
export interface HostedFake<I> {
  info: I;
  close(): Promise<void>;
}

/** Starts `bench/fake-host.ts <kind> ...args` (same runtime and loader as this process) and reads its info line. */
export async function hostFake<I>(kind: FakeKind, args: string[] = []): Promise<HostedFake<I>> {
  const child: ChildProcess = spawn(
    process.execPath,
    [...process.execArgv, new URL('./fake-host.ts', import.meta.url).pathname, kind, ...args],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  let buf = '';
  const info = await new Promise<I>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`fake-host ${kind} exited (${code}) before it was ready`)));
    child.stdout!.on('data', (d: Buffer) => {
      buf += String(d);
      const nl = buf.indexOf('\n');
      if (nl >= 0) resolve(JSON.parse(buf.slice(0, nl)) as I);
    });
  });
  return {
    info,
    async close() {
      if (child.exitCode !== null) return;
      child.stdin!.end();
      const t = setTimeout(() => child.kill('SIGKILL'), 3000);
      await once(child, 'exit');
      clearTimeout(t);
    },
  };
}
