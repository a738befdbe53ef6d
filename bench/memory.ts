/**
 * `recall_memory` p50 at 10,000 memories, through the real kernel's dispatch (schema, policy, hooks), for the
 * keyword path (no embeddings) and the hybrid path (vector + keyword; 384-dimension random vectors, already embedded; the query
 * embedding is a random vector from a scripted `llm` plugin). Peers in the same run: a naive scan over the same
 * 10,000 entries (entries already in memory; keyword: lower-case and split every entry per query; vector: cosine over number[] arrays with
 * norms computed per query, full sort). Keel scores packed float32 rows in WebAssembly SIMD (sdk/vectors).
 *
 * Standalone: `npx tsx bench/memory.ts`.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { startKernel } from '../kernel/kernel.js';
import { LogSink } from '../kernel/log.js';
import { discoverBuiltins } from '../kernel/plugins/discover.js';
import type { MemoryEntry } from '../sdk/index.js';
import { type BenchRow, median, printRows } from './lib.js';

const N = 10_000;
const DIM = 384;
const QUERIES = 200;
const ROOT = join(import.meta.dirname, '..');
const REGISTRY = Symbol.for('keel.memoryTestLlm');

let seed = 42;
const rand = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
const WORDS = Array.from({ length: 3000 }, (_, i) => `w${i.toString(36)}x${'abcdefghij'[i % 10]}`);
const word = (): string => WORDS[Math.floor(rand() * WORDS.length)]!;
const randomVec = (): number[] => Array.from({ length: DIM }, () => rand() * 2 - 1);

function entries(): MemoryEntry[] {
  const t0 = Date.now() - N * 1000;
  return Array.from({ length: N }, (_, i) => ({
    id: `mem_e_${i}`,
    type: 'episodic' as const,
    content: `summary ${i}: ${Array.from({ length: 14 }, word).join(' ')}`,
    timestamp: new Date(t0 + i * 1000).toISOString(),
    metadata: { actionId: `act_${i}`, step: 0, channel: 'cli', session: 'operator', summarizer: 'extractive' },
  }));
}

function unitB64(v: number[]): string {
  const f = Float32Array.from(v);
  let n = 0;
  for (const x of f) n += x * x;
  n = Math.sqrt(n);
  for (let i = 0; i < f.length; i++) f[i]! /= n;
  return Buffer.from(f.buffer).toString('base64');
}

async function keelP50(list: MemoryEntry[], vectors: number[][] | undefined, queries: string[]): Promise<number> {
  const home = mkdtempSync(join(tmpdir(), 'keel-bench-memory-'));
  const empty = mkdtempSync(join(tmpdir(), 'keel-bench-memory-b-'));
  writeFileSync(join(home, 'keel.config.yaml'), 'memoryEpisodicLimit: 100000\nmemoryConsolidationThreshold: 10000\n');
  const snap = {
    version: 1,
    seq: 0,
    short: [],
    episodic: list,
    vectors: vectors ? Object.fromEntries(list.map((e, i) => [e.id, { model: 'fake/fake-embed', b64: unitB64(vectors[i]!) }])) : {},
  };
  writeFileSync(join(home, 'memory.json'), JSON.stringify(snap));
  if (vectors) {
    mkdirSync(join(home, 'plugins'), { recursive: true });
    cpSync(join(ROOT, 'test', 'plugins', 'memory', 'fake-llm'), join(home, 'plugins', 'fake-llm'), { recursive: true });
    const g = globalThis as unknown as Record<symbol, Map<string, unknown> | undefined>;
    (g[REGISTRY] ??= new Map()).set(home, { embed: () => randomVec() });
  }
  const candidate = (await discoverBuiltins(join(ROOT, 'plugins'))).find((c) => c.id === 'memory')!;
  const k = await startKernel({
    home,
    builtinDir: empty,
    extraPlugins: [candidate],
    env: {},
    watchSkills: false,
    logs: new LogSink({ quiet: true }),
  });
  try {
    const times: number[] = [];
    for (let i = 0; i < 20; i++) await k.execute('recall_memory', { query: queries[i % queries.length]! }, k.operator); // warm-up
    for (const q of queries) {
      const t = performance.now();
      const r = await k.execute('recall_memory', { query: q }, k.operator);
      times.push(performance.now() - t);
      if (!r.success) throw new Error(r.result);
    }
    return median(times);
  } finally {
    await k.stop();
    rmSync(home, { recursive: true, force: true });
    rmSync(empty, { recursive: true, force: true });
  }
}

function naiveKeywordP50(list: MemoryEntry[], queries: string[]): number {
  const times: number[] = [];
  for (const q of queries) {
    const t = performance.now();
    const all = list; // in memory already: the peer pays only for the scan
    const terms = q.toLowerCase().split(/\s+/);
    const hits = all.filter((e) => {
      const words = e.content.toLowerCase().split(/\W+/);
      return terms.some((w) => words.includes(w));
    });
    hits.sort((a, b) => b.timestamp.localeCompare(a.timestamp));
    void hits.slice(0, 10);
    times.push(performance.now() - t);
  }
  return median(times);
}

function naiveVectorP50(vectors: number[][], queries: number[][]): number {
  const times: number[] = [];
  for (const q of queries) {
    const t = performance.now();
    const qn = Math.sqrt(q.reduce((s, x) => s + x * x, 0));
    const scored = vectors.map((v, i) => {
      let d = 0;
      let n = 0;
      for (let j = 0; j < v.length; j++) {
        d += v[j]! * q[j]!;
        n += v[j]! * v[j]!;
      }
      return { i, s: d / (Math.sqrt(n) * qn) };
    });
    scored.sort((a, b) => b.s - a.s);
    void scored.slice(0, 10);
    times.push(performance.now() - t);
  }
  return median(times);
}

export async function benchMemory(): Promise<BenchRow[]> {
  const list = entries();
  const queries = Array.from({ length: QUERIES }, () => `${word()} ${word()}`);
  const kw = await keelP50(list, undefined, queries);
  const kwPeer = naiveKeywordP50(list, queries);
  const vectors = list.map(() => randomVec());
  const vec = await keelP50(list, vectors, queries);
  const vecPeer = naiveVectorP50(vectors, Array.from({ length: QUERIES }, randomVec));
  return [
    {
      name: 'recall_memory p50, keyword, 10,000 memories',
      value: kw,
      unit: 'ms',
      peer: 'naive scan',
      peerValue: kwPeer,
      budget: '<= 1x naive scan',
      ok: kw <= kwPeer,
    },
    {
      name: 'recall_memory p50, hybrid (vector 384-d + keyword), 10,000 memories',
      value: vec,
      unit: 'ms',
      peer: 'naive cosine scan',
      peerValue: vecPeer,
      budget: '<= 1x naive scan',
      ok: vec <= vecPeer,
    },
  ];
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  printRows(await benchMemory());
}
