/**
 * Hybrid ranking. Keyword: FTS5 bm25 over every query word (OR), normalized by the best keyword hit of this
 * query (best = 1). Vector: cosine of the query embedding, clamped to 0..1. With a query vector the score is
 * 0.6 x cosine + 0.4 x keyword (weighted fusion, so a score keeps meaning across queries); without one it is the
 * keyword score alone. Candidates: the best max(5 x limit, 50) of each side.
 */
import type { KnowledgeStore, SearchFilter } from './types.js';

export const VECTOR_WEIGHT = 0.6;
export const KEYWORD_WEIGHT = 0.4;

export interface SearchHit {
  score: number;
  source: string;
  title: string;
  collection: string;
  tags: string[];
  document_id: string;
  chunk_id: number;
  position: number;
  keyword_score: number;
  vector_score?: number;
  content: string;
}

const round = (x: number) => Math.round(x * 10_000) / 10_000;

export async function searchKnowledge(
  store: KnowledgeStore,
  opts: { query: string; limit: number; filter: SearchFilter; embedding?: { vector: ArrayLike<number>; model: string } },
): Promise<SearchHit[]> {
  const k = Math.max(opts.limit * 5, 50);
  const kw = await store.keywordSearch(opts.query, k, opts.filter);
  const best = kw.reduce((m, h) => Math.max(m, h.bm25), 0);
  const kwScore = new Map(kw.map((h) => [h.chunkId, best > 0 ? Math.max(0, h.bm25) / best : 1]));
  let cos = new Map<number, number>();
  if (opts.embedding) {
    const vec = await store.vectorSearch(opts.embedding.vector, opts.embedding.model, k, opts.filter);
    cos = new Map(vec.map((h) => [h.chunkId, h.cosine]));
    const missing = kw.map((h) => h.chunkId).filter((id) => !cos.has(id));
    if (missing.length) for (const [id, c] of await store.cosines(opts.embedding.vector, opts.embedding.model, missing)) cos.set(id, c);
  }
  const ids = new Set([...kwScore.keys(), ...cos.keys()]);
  const scored = [...ids].map((id) => {
    const ks = kwScore.get(id) ?? 0;
    const vs = cos.has(id) ? Math.max(0, cos.get(id)!) : undefined;
    const score = opts.embedding ? VECTOR_WEIGHT * (vs ?? 0) + KEYWORD_WEIGHT * ks : ks;
    return { id, score: Math.min(1, Math.max(0, score)), ks, vs };
  });
  scored.sort((a, b) => b.score - a.score || a.id - b.id);
  const top = scored.filter((s) => s.score > 0).slice(0, opts.limit);
  const records = new Map((await store.chunks(top.map((t) => t.id))).map((c) => [c.id, c]));
  const out: SearchHit[] = [];
  for (const t of top) {
    const c = records.get(t.id);
    if (!c) continue;
    out.push({
      score: round(t.score),
      source: c.source,
      title: c.title,
      collection: c.collection,
      tags: c.tags,
      document_id: c.documentId,
      chunk_id: c.id,
      position: c.position,
      keyword_score: round(t.ks),
      ...(t.vs !== undefined ? { vector_score: round(t.vs) } : {}),
      content: c.content,
    });
  }
  return out;
}
