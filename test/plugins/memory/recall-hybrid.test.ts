/**
 * Recall with embeddings is hybrid (0.6 x cosine + 0.4 x keyword coverage): an exact word lifts a memory above a
 * merely similar one. Memories kept before embeddings were configured are found at once by their words, the
 * newest batch is embedded by the recall itself and the rest in the background, a batch at a time; the plugin's
 * stop ends that work after its current batch; a failing embedding service leaves recall working by keyword.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rm, tmp, waitFor } from '../../helpers.js';
import { conceptEmbed, type LlmScript, startMemory, type MemoryHarness } from './harness.js';

let h: MemoryHarness | undefined;
let home: string | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  if (home) rm(home);
  home = undefined;
});

const embed = conceptEmbed;

/** A home whose memory.json holds `n` episodic memories (no vectors), the oldest about a zebra crossing. */
function homeWith(n: number): string {
  const dir = tmp('keel-memory-hybrid-');
  const t0 = Date.parse('2026-01-01T00:00:00Z');
  const episodic = Array.from({ length: n }, (_, i) => ({
    id: `mem_h_${i}`,
    type: 'episodic',
    content: i === 0 ? 'zebra crossing near the bakery' : `note ${i} about the garden shed`,
    timestamp: new Date(t0 + i * 1000).toISOString(),
    metadata: { actionId: `act_${i}`, step: 0, channel: 'cli', session: 'operator', summarizer: 'extractive' },
  }));
  writeFileSync(join(dir, 'memory.json'), JSON.stringify({ version: 1, seq: 0, short: [], episodic, vectors: {} }));
  writeFileSync(join(dir, 'keel.config.yaml'), 'memoryEpisodicLimit: 100000\nmemoryConsolidationThreshold: 100000\n');
  return dir;
}

const recall = async (query: string, limit = 3) => {
  const r = await h!.run('recall_memory', { query, limit });
  expect(r.success, r.result).toBe(true);
  return JSON.parse(r.result).results as string;
};
const vectors = () => [...h!.memory.store.vectors.values()].filter((v) => v.model === 'fake/fake-embed').length;

describe('recall_memory with embeddings: hybrid ranking and background embedding', () => {
  it('an exact word lifts a memory above one that is only close in meaning', async () => {
    h = await startMemory({ llm: { embed } });
    await h.memory.record({ content: 'I drive an automobile to work' });
    await h.memory.record({ content: 'the car dealer number is 5551234' });
    const results = await recall('car dealer', 2);
    expect(results).toMatch(/vector similarity and keyword matches, ranked by relevance/);
    const [first, second] = results.split('\n').slice(1);
    // By cosine alone the automobile line is closer (0.999 against 0.990); the dealer line holds both words.
    expect(first).toMatch(/score 0\.99\d \| the car dealer number is 5551234/);
    expect(second).toMatch(/score 0\.59\d \| I drive an automobile to work/);
  });

  it('finds memories kept before embeddings by their words at once, and embeds them in the background, newest first', async () => {
    home = homeWith(701);
    const script: LlmScript = { embed, embedDelayMs: 100 };
    h = await startMemory({ home, llm: script });
    const first = await recall('zebra');
    // The recall embedded the query and the newest 256 memories; the zebra line (the oldest) is found by its word.
    expect(first).toMatch(/1\. \[2026-01-01T00:00:00\.000Z\] episodic \| cli \| score 1\.000 \| zebra crossing near the bakery/);
    expect(script.embeds).toEqual([1, 256]);
    expect(vectors()).toBe(256);
    // The rest follow in the background, a batch per call, without another recall.
    await h.memory.settle();
    expect(script.embeds).toEqual([1, 256, 256, 189]);
    expect(vectors()).toBe(701);
    const again = await recall('zebra');
    expect(again).toMatch(/score 0\.9\d\d \| zebra crossing near the bakery/);
    expect(script.embeds!.slice(4)).toEqual([1]);
  });

  it('a process that writes memory keeps the vectors it made on disk (the quiet-time snapshot), not only at its stop', async () => {
    home = homeWith(300);
    // Slow enough that the snapshot after the record comes while the memories are still being embedded.
    const script: LlmScript = { embed, embedDelayMs: 100 };
    h = await startMemory({ home, llm: script });
    h.memory.store.quietMs = 50;
    await h.memory.record({ content: 'a new memory: this process writes' });
    await recall('zebra');
    await h.memory.settle();
    expect(vectors()).toBe(301);
    const onDisk = () => Object.keys((JSON.parse(readFileSync(join(home!, 'memory.json'), 'utf8')) as { vectors: object }).vectors).length;
    await waitFor(() => onDisk() === 301 || undefined, 'the vectors in memory.json', 10_000);
  });

  it("the plugin's stop ends the background embedding after its current batch", async () => {
    home = homeWith(2000);
    const script: LlmScript = { embed, embedDelayMs: 150 };
    h = await startMemory({ home, llm: script });
    await recall('zebra');
    await h.close();
    h = undefined;
    // 1 query + 256 inline + at most the one batch in flight at the stop, of the 7 the rest would take.
    expect(script.embeds!.length).toBeLessThanOrEqual(3);
  });

  it('keeps vectors of the current long-memory sections only: editing a section many times leaves one vector for it', async () => {
    const script: LlmScript = { embed };
    h = await startMemory({ llm: script });
    for (let i = 0; i < 12; i++) {
      const r = await h.run('update_journal', { entry_text: `Drove the car to town, trip ${i}.` });
      expect(r.success, r.result).toBe(true);
      expect(await recall('car trip')).toMatch(/JOURNAL\.md .*trip \d+/);
    }
    // Each edit made a new text of today's section; only the current one keeps its vector (one per section).
    const sections = h.memory.counts().long;
    expect(h.memory.recaller.longVectorCount).toBe(sections);
    // Nothing changed since: the next recall embeds only the query.
    const before = script.embeds!.length;
    await recall('car trip');
    expect(script.embeds!.slice(before)).toEqual([1]);
    // A recall that may not read the long files (a user's) keeps the cache as it is.
    const r = await h.run('recall_memory', { query: 'car' }, { kind: 'user', channel: 'chatA', userId: 'zoe' });
    expect(r.success, r.result).toBe(true);
    expect(h.memory.recaller.longVectorCount).toBe(sections);
  });

  it('a failing embedding service leaves recall working: the memories it could not embed are found by keyword', async () => {
    home = homeWith(300);
    const script: LlmScript = { embed, embedFails: 'embedding service overloaded' };
    h = await startMemory({ home, llm: script });
    const results = await recall('zebra');
    expect(results).toMatch(/vector similarity and keyword matches/);
    expect(results).toMatch(/score 1\.000 \| zebra crossing near the bakery/);
    expect(vectors()).toBe(0);
  });
});
