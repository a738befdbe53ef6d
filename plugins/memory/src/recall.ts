/**
 * Recall: what an actor may search, vector search over every entry's embedding (one packed matrix per model) with
 * keyword search as the fallback (SPEC: ranked by recency then), and the long-memory sections.
 */
import type { Actor, LlmCapability, MemoryEntry, PluginContext } from '../../../sdk/index.js';
import { errorMessage } from '../../../sdk/errors.js';
import { PackedRows } from '../../../sdk/vectors/packed-rows.js';
import { dot, hitOf, longEntry, unit, type RecallHit } from './entries.js';
import { coverage, type KeywordIndex } from './keyword-index.js';
import { LONG_FILES, readSections, type LongFile, type Section } from './long-files.js';
import { isAdmin, sessionKey } from './scope.js';
import type { MemoryStore } from './store.js';
import { tokens } from './text.js';

/** Vector recall embeds at most this many not-yet-embedded entries per call (the rest are found by keyword). */
const EMBED_PER_RECALL = 2048;
const EMBED_BATCH = 256;

export interface RecallDeps {
  ctx: PluginContext;
  store: MemoryStore;
  index: KeywordIndex;
  embedder(): LlmCapability | undefined;
}

export class MemoryRecall {
  private longVectors = new Map<string, { model: string; vec: Float32Array }>();
  private embedChecked = '';
  /**
   * Every vector of one model packed into rows (sdk/vectors: one SIMD pass per query), rebuilt when the store
   * changes; the rows' memory is kept for the next rebuild of the same dimension.
   */
  private mat: { key: string; entries: MemoryEntry[]; rows: PackedRows<'f32'> } | undefined;

  private matrix(model: string, dim: number, all: MemoryEntry[]): { entries: MemoryEntry[]; rows: PackedRows<'f32'> } {
    const key = `${model}:${dim}:${this.d.store.version}`;
    if (this.mat?.key === key) return this.mat;
    const entries = all.filter((e) => {
      const v = this.d.store.vectors.get(e.id);
      return v !== undefined && v.model === model && v.vec.length === dim;
    });
    const rows = this.mat?.rows.dim === dim ? this.mat.rows : new PackedRows('f32', dim);
    rows.reserve(entries.length);
    entries.forEach((e, i) => rows.set(i, this.d.store.vectors.get(e.id)!.vec));
    this.mat = { key, entries, rows };
    return this.mat;
  }

  constructor(private readonly d: RecallDeps) {}

  /** Forget cached long-memory vectors (after a reset). */
  clear(): void {
    this.longVectors.clear();
  }

  /** What an actor may search: admins everything; others their own session's entries and no long files. */
  visible(actor: Actor | undefined): { entries: (e: MemoryEntry) => boolean; long: readonly LongFile[] } {
    if (actor === undefined || isAdmin(this.d.ctx, actor)) return { entries: () => true, long: LONG_FILES };
    const session = sessionKey(this.d.ctx, actor);
    return { entries: (e) => e.metadata.session === session, long: [] };
  }

  async recall(
    query: string,
    limit: number,
    actor: Actor | undefined,
    signal?: AbortSignal,
  ): Promise<{ mode: 'vector' | 'keyword'; hits: RecallHit[]; note?: string }> {
    this.d.store.refresh();
    const scope = this.visible(actor);
    const sections = readSections(this.d.ctx.home, scope.long);
    const emb = this.d.embedder();
    if (emb) {
      try {
        return { mode: 'vector', hits: await this.vectorRecall(emb, query, limit, scope.entries, sections, signal) };
      } catch (e) {
        const note = `vector search failed (${errorMessage(e)}); keyword search used instead`;
        return { mode: 'keyword', hits: this.keywordRecall(query, limit, scope.entries, sections), note };
      }
    }
    return {
      mode: 'keyword',
      hits: this.keywordRecall(query, limit, scope.entries, sections),
      note: 'no embedding provider is configured (provider A or B key, or provider G), so this is keyword search ranked by recency',
    };
  }

  keywordRecall(query: string, limit: number, allowed: (e: MemoryEntry) => boolean, sections: Section[]): RecallHit[] {
    const q = tokens(query);
    if (!q.length) return [];
    const hits: RecallHit[] = [];
    const byId = new Map<string, MemoryEntry>();
    const matched = this.d.index.match(q);
    if (matched.size) for (const e of this.d.store.short) if (matched.has(e.id)) byId.set(e.id, e);
    if (matched.size) for (const e of this.d.store.episodic) if (matched.has(e.id)) byId.set(e.id, e);
    for (const [id, score] of matched) {
      const e = byId.get(id);
      if (e && allowed(e)) hits.push(hitOf(e, score));
    }
    for (const s of sections) {
      const score = coverage(q, `${s.heading} ${s.body}`);
      if (score > 0) hits.push(hitOf(longEntry(s), score));
    }
    // SPEC: keyword results are ranked by recency (newest first); the score says how much of the query matched.
    hits.sort((a, b) => (a.timestamp < b.timestamp ? 1 : a.timestamp > b.timestamp ? -1 : b.score - a.score));
    return hits.slice(0, limit);
  }

  private async vectorRecall(
    emb: LlmCapability,
    query: string,
    limit: number,
    allowed: (e: MemoryEntry) => boolean,
    sections: Section[],
    signal?: AbortSignal,
  ): Promise<RecallHit[]> {
    const qr = await emb.embed({ texts: [query], ...(signal ? { signal } : {}) });
    if (!qr?.vectors[0]) throw new Error('no embedding for the query');
    const model = `${qr.provider}/${qr.model}`;
    const qv = unit(qr.vectors[0]);
    const all = [...this.d.store.short, ...this.d.store.episodic];
    // Embed what has no vector of this model yet (bounded per call; the rest still come by keyword). Checked
    // again only after the store changed.
    if (this.embedChecked !== `${model}:${this.d.store.version}`) {
      const missing = all.filter((e) => allowed(e) && this.d.store.vectors.get(e.id)?.model !== model).slice(0, EMBED_PER_RECALL);
      for (let i = 0; i < missing.length; i += EMBED_BATCH) {
        const part = missing.slice(i, i + EMBED_BATCH);
        const r = await emb.embed({ texts: part.map((e) => e.content), ...(signal ? { signal } : {}) });
        part.forEach((e, j) => r?.vectors[j] && this.d.store.setVector(e.id, { model, vec: unit(r.vectors[j]) }));
      }
      if (missing.length < EMBED_PER_RECALL) this.embedChecked = `${model}:${this.d.store.version}`;
    }
    const longs = sections.map((s) => ({ s, text: `${s.heading}\n${s.body}`.slice(0, 2000) }));
    const longMissing = longs.filter(({ text }) => this.longVectors.get(text)?.model !== model);
    if (longMissing.length) {
      const r = await emb.embed({ texts: longMissing.map((l) => l.text), ...(signal ? { signal } : {}) });
      longMissing.forEach((l, j) => r?.vectors[j] && this.longVectors.set(l.text, { model, vec: unit(r.vectors[j]) }));
    }
    const top: RecallHit[] = [];
    const consider = (h: RecallHit): void => {
      if (top.length < limit) {
        top.push(h);
        top.sort((a, b) => b.score - a.score);
      } else if (h.score > top.at(-1)!.score) {
        top[top.length - 1] = h;
        top.sort((a, b) => b.score - a.score);
      }
    };
    const dim = qv.length;
    const m = this.matrix(model, dim, all);
    const scores = m.rows.score(qv, m.entries.length);
    for (let i = 0; i < scores.length; i++) {
      const s = scores[i]!;
      if (top.length >= limit && s <= top.at(-1)!.score) continue;
      const e = m.entries[i]!;
      if (allowed(e)) consider(hitOf(e, s));
    }
    for (const { s, text } of longs) {
      const v = this.longVectors.get(text);
      if (v && v.vec.length === dim) consider(hitOf(longEntry(s), dot(qv, v.vec)));
    }
    return top;
  }
}
