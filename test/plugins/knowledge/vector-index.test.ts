/**
 * The in-memory vector index: int8 cosines match float cosines closely; the sign-bit pre-selection path
 * (above exactMax) still finds near neighbours; filters, replacement, removal and compaction keep results right.
 */
import { describe, expect, it } from 'vitest';
import { VectorIndex, quantize } from '../../../plugins/knowledge/src/vector-index.js';
import { seeded } from '../../helpers.js';

const r = seeded(1);
const rand = () => Float32Array.from({ length: 384 }, () => r() * 2 - 1);
const cos = (a: Float32Array, b: Float32Array) => {
  let d = 0,
    na = 0,
    nb = 0;
  for (let i = 0; i < a.length; i++) {
    d += a[i]! * b[i]!;
    na += a[i]! ** 2;
    nb += b[i]! ** 2;
  }
  return d / Math.sqrt(na * nb);
};
const noisy = (v: Float32Array, amp: number) => v.map((x) => x + (r() * 2 - 1) * amp);

describe('vector index', () => {
  it('int8 cosine is within 0.01 of the float cosine; zero vectors are refused', () => {
    const idx = new VectorIndex('m', 384);
    const vs = Array.from({ length: 50 }, rand);
    vs.forEach((v, i) => idx.add(i + 1, 1, v));
    const q = noisy(vs[7]!, 0.8);
    for (const h of idx.search(q, 50)) expect(Math.abs(h.cosine - cos(q, vs[h.chunkId - 1]!))).toBeLessThan(0.01);
    expect(quantize(new Float32Array(384))).toBeUndefined();
    expect(idx.add(99, 1, new Float32Array(384))).toBe(false);
    expect(idx.add(98, 1, new Float32Array(10))).toBe(false);
  });

  for (const [exactMax, simd] of [
    [100_000, true],
    [100_000, false],
    [100, true],
  ] as const) {
    const how = exactMax === 100 ? 'sign-bit pre-selection' : simd ? 'exact scan, SIMD' : 'exact scan, plain JS';
    it(`finds near neighbours, honours filters, replacement and removal (${how})`, () => {
      const idx = new VectorIndex('m', 384, { exactMax, simd });
      expect(idx.simd).toBe(simd);
      const vs = Array.from({ length: 3000 }, rand);
      vs.forEach((v, i) => idx.add(i + 1, i % 3, v));
      for (const t of [5, 1234, 2999]) expect(idx.search(noisy(vs[t]!, 0.3), 5)[0]!.chunkId).toBe(t + 1);
      // filter: only documents 1 (i % 3 === 1)
      const f = idx.search(noisy(vs[5]!, 0.3), 10, (doc) => doc === 1);
      for (const h of f) expect((h.chunkId - 1) % 3).toBe(1);
      // replacement moves a chunk to a new vector
      idx.add(6, 0, vs[100]!);
      expect(
        idx
          .search(vs[100]!, 2)
          .map((h) => h.chunkId)
          .sort((a, b) => a - b),
      ).toEqual([6, 101]);
      // removal (and compaction past half removed)
      for (let i = 1; i <= 2000; i++) idx.remove(i);
      expect(idx.count).toBe(1000);
      expect(idx.search(vs[2500]!, 1)[0]).toMatchObject({ chunkId: 2501 });
      expect(idx.search(vs[10]!, 5).some((h) => h.chunkId <= 2000)).toBe(false);
    });
  }
});

describe('vector index scans', () => {
  it('the SIMD scan ranks and scores exactly as the plain JS one, with and without a filter, before and after compaction', () => {
    const simd = new VectorIndex('m', 384, { simd: true });
    const js = new VectorIndex('m', 384, { simd: false });
    const vs = Array.from({ length: 5000 }, rand);
    vs.forEach((v, i) => {
      simd.add(i + 1, i % 5, v);
      js.add(i + 1, i % 5, v);
    });
    const check = () => {
      for (const t of [3000, 3077, 4999]) {
        const q = noisy(vs[t]!, 0.9);
        expect(simd.search(q, 10)).toEqual(js.search(q, 10));
        // Most documents allowed (one kernel pass, the rest skipped) and few (those alone).
        expect(simd.search(q, 10, (d) => d !== 2)).toEqual(js.search(q, 10, (d) => d !== 2));
        expect(simd.search(q, 10, (d) => d === 3)).toEqual(js.search(q, 10, (d) => d === 3));
      }
    };
    check();
    // Past half removed at over 4,096 slots: both compact.
    for (let i = 1; i <= 3000; i++) {
      simd.remove(i);
      js.remove(i);
    }
    check();
  });
});

describe('vector index and other processes', () => {
  it('a store sees vectors another connection (another Keel process) committed', async () => {
    const { SqliteKnowledgeStore } = await import('../../../plugins/knowledge/src/sqlite-store.js');
    const { tmp, rm } = await import('../../helpers.js');
    const { join } = await import('node:path');
    const dir = tmp();
    const a = new SqliteKnowledgeStore(join(dir, 'k.db'));
    const b = new SqliteKnowledgeStore(join(dir, 'k.db'));
    try {
      const v1 = rand();
      const v2 = rand();
      const doc = { title: 't', collection: 'c', tags: [], format: 'text' as const, metadata: {} };
      await a.upsert({ ...doc, source: 'one' }, [{ content: 'one', vector: v1 }], 'm');
      expect((await a.vectorSearch(v1, 'm', 1, {}))[0]).toBeDefined(); // a has loaded its index
      await b.upsert({ ...doc, source: 'two' }, [{ content: 'two', vector: v2 }], 'm');
      const hit = (await a.vectorSearch(v2, 'm', 1, {}))[0]!;
      expect((await a.chunks([hit.chunkId]))[0]!.source).toBe('two');
    } finally {
      await a.close();
      await b.close();
      rm(dir);
    }
  });

  it('a vector computed for deleted text is not stored on the new text that took its chunk id', async () => {
    const { SqliteKnowledgeStore } = await import('../../../plugins/knowledge/src/sqlite-store.js');
    const { tmp, rm } = await import('../../helpers.js');
    const { join } = await import('node:path');
    const dir = tmp();
    const store = new SqliteKnowledgeStore(join(dir, 'k.db'));
    try {
      const doc = { title: 't', collection: 'c', tags: [], format: 'text' as const, metadata: {} };
      const { document } = await store.upsert({ ...doc, source: 'old' }, [{ content: 'the old text' }]);
      // The background re-embedding reads the stale chunk, then the model takes its time...
      const [stale] = await store.staleChunks('m', 10);
      expect(stale?.content).toBe('the old text');
      // ...meanwhile the document is deleted and another stored: SQLite gives the new chunk the same id.
      await store.deleteDocument(document.id);
      await store.upsert({ ...doc, source: 'new' }, [{ content: 'the new text' }]);
      const [fresh] = await store.staleChunks('m', 10);
      expect(fresh).toEqual({ id: stale!.id, content: 'the new text' });
      // The old text's vector lands nowhere; the new text stays stale until its own vector comes.
      await expect(store.setVectors('m', [{ chunkId: stale!.id, content: stale!.content, vector: rand() }])).resolves.toBe(0);
      expect(await store.countStale('m')).toBe(1);
      await expect(store.setVectors('m', [{ chunkId: fresh!.id, content: fresh!.content, vector: rand() }])).resolves.toBe(1);
      expect(await store.countStale('m')).toBe(0);
    } finally {
      await store.close();
      rm(dir);
    }
  });
});
