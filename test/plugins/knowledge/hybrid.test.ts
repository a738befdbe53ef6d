/**
 * Hybrid search with a test `llm` capability (deterministic hashed bag-of-words embedding with synonyms):
 * vector similarity finds what keywords miss; the model is recorded; a model change is reported and the
 * stale chunks are re-embedded in the background; an embedding failure falls back to keyword.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../helpers.js';
import { boot, cleanup } from './harness.js';

afterEach(cleanup);

const embedCalls = (home: string) =>
  existsSync(join(home, 'embed.log')) ? readFileSync(join(home, 'embed.log'), 'utf8').trim().split('\n').map(Number) : [];

describe('knowledge hybrid search', () => {
  it('keyword alone misses a synonym that hybrid search finds', async () => {
    const kw = await boot();
    await kw.call('rag_ingest', { content: 'My car needs new tyres before winter.', source: 'garage' });
    await kw.call('rag_ingest', { content: 'Bananas are rich in potassium.', source: 'fruit' });
    const k1 = await kw.call('rag_search', { query: 'automobile' });
    expect(k1).toMatchObject({ mode: 'keyword', results: [] });

    const hy = await boot({ llm: true });
    const r = await hy.call('rag_ingest', { content: 'My car needs new tyres before winter.', source: 'garage' });
    expect(r).toMatchObject({ embedded: true, embeddingModel: 'hash-384' });
    await hy.call('rag_ingest', { content: 'Bananas are rich in potassium.', source: 'fruit' });
    const s = await hy.call('rag_search', { query: 'automobile' });
    expect(s.mode).toBe('hybrid');
    expect(s.embeddingModel).toBe('hash-384');
    expect(s.notice).toBeUndefined();
    expect(s.results[0]).toMatchObject({ source: 'garage', keyword_score: 0 });
    expect(s.results[0].vector_score).toBeGreaterThan(0);
    for (const h of s.results) {
      expect(h.score).toBeGreaterThanOrEqual(0);
      expect(h.score).toBeLessThanOrEqual(1);
    }
    // a keyword match and a vector match together rank first
    const both = await hy.call('rag_search', { query: 'car tyres' });
    expect(both.results[0].source).toBe('garage');
    expect(both.results[0]).toMatchObject({ keyword_score: 1 });
    expect(both.results[0].score).toBeGreaterThan(s.results[0].score);
    expect((await hy.call('rag_list', {})).documents[0].embeddingModel).toBe('hash-384');
    // re-ingesting replaces the vectors too: the old text is no longer found by meaning
    await hy.call('rag_ingest', { content: 'Potatoes grow underground.', source: 'garage' });
    const after = await hy.call('rag_search', { query: 'automobile' });
    expect(after.results.some((h: any) => h.content.includes('tyres'))).toBe(false);
  });

  it('embeds chunks in batches at ingest', async () => {
    const k = await boot({ llm: true });
    const csv = ['n,text', ...Array.from({ length: 3000 }, (_, i) => `${i},row number ${i} about a car`)].join('\n');
    const r = await k.call('rag_ingest', { content: csv, source: 'rows.csv', format: 'csv' });
    expect(r.chunks).toBeGreaterThan(64);
    const calls = embedCalls(k.home);
    expect(calls.length).toBeGreaterThan(1);
    expect(Math.max(...calls)).toBeLessThanOrEqual(64);
    expect(calls.reduce((a, b) => a + b, 0)).toBe(r.chunks);
  });

  it('filters apply to vector results too', async () => {
    const k = await boot({ llm: true });
    await k.call('rag_ingest', { content: 'The car is red.', source: 'a', collection: 'x', tags: ['t1'] });
    await k.call('rag_ingest', { content: 'The car is blue.', source: 'b', collection: 'y', tags: ['t2'] });
    const src = async (args: Record<string, unknown>) =>
      (await k.call('rag_search', { query: 'automobile', ...args })).results.map((h: any) => h.source).sort();
    expect(await src({})).toEqual(['a', 'b']);
    expect(await src({ collection: 'y' })).toEqual(['b']);
    expect(await src({ tags: ['t1'] })).toEqual(['a']);
  });

  it('a changed embedding model is reported and stale chunks are re-embedded in the background', async () => {
    const k = await boot({ llm: true });
    await k.call('rag_ingest', { content: 'The kitten sleeps on the sofa.', source: 'pets' });
    writeFileSync(join(k.home, 'embed-model.txt'), 'hash-384-v2');
    const s = await k.call('rag_search', { query: 'feline' });
    expect(s.embeddingModel).toBe('hash-384-v2');
    expect(s.notice).toMatch(/1 chunk\(s\) have no embedding from hash-384-v2/);
    const again = await waitFor(async () => {
      const r = await k.call('rag_search', { query: 'feline' });
      return r.notice === undefined && r;
    }, 're-embedding');
    expect(again.results[0]).toMatchObject({ source: 'pets' });
    expect((await k.call('rag_list', {})).documents[0].embeddingModel).toBe('hash-384-v2');
  });

  it('documents stored without embeddings become vector-searchable once embeddings exist', async () => {
    const k = await boot({ llm: true });
    writeFileSync(join(k.home, 'embed-off'), '');
    const r = await k.call('rag_ingest', { content: 'A vehicle parked outside.', source: 'street' });
    expect(r.embedded).toBe(false);
    expect((await k.call('rag_search', { query: 'car' })).mode).toBe('keyword');
    rmSync(join(k.home, 'embed-off'));
    const first = await k.call('rag_search', { query: 'car' });
    expect(first.mode).toBe('hybrid');
    const later = await waitFor(async () => {
      const x = await k.call('rag_search', { query: 'car' });
      return x.results.length > 0 && x.notice === undefined && x;
    }, 'lazy embedding');
    expect(later.results[0].source).toBe('street');
  });

  it('an embedding failure stores the document for keyword search and says so', async () => {
    const k = await boot({ llm: true });
    writeFileSync(join(k.home, 'embed-fail'), '');
    const r = await k.call('rag_ingest', { content: 'Volcanoes erupt lava.', source: 'geo' });
    expect(r.embedded).toBe(false);
    expect(r.warning).toMatch(/embedding service down/);
    const s = await k.call('rag_search', { query: 'volcanoes' });
    expect(s.mode).toBe('keyword');
    expect(s.notice).toMatch(/embedding the query failed/);
    expect(s.results[0].source).toBe('geo');
  });
});
