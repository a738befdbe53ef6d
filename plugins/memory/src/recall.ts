/**
 * Recall: what an actor may search; with embeddings, a hybrid ranking (0.6 x cosine + 0.4 x keyword coverage, as
 * the knowledge store ranks) over every entry and long-memory section, cosines from one packed matrix per model;
 * without, keyword search (SPEC: ranked by recency then).
 *
 * Entries without a vector of the current model (memories kept before embeddings were configured, or after the
 * embedding model changed) are embedded in the background, a batch at a time, newest first; a recall embeds at
 * most one batch itself, so it never waits for a whole memory to be embedded, and until then such entries are
 * found by their words, ranked by their keyword share alone (as keyword search ranks them).
 */
import { errorsFor } from '../../../sdk/errors.js';
import type { Actor, LlmCapability, MemoryEntry, PluginContext } from '../../../sdk/index.js';
import { errorMessage } from '../../../sdk/errors.js';
import { PackedRows } from '../../../sdk/vectors/packed-rows.js';
import { dot, hitOf, longEntry, unit, type RecallHit } from './entries.js';
import { coverage, type KeywordIndex } from './keyword-index.js';
import { LONG_FILES, readSections, type LongFile, type Section } from './long-files.js';
import { isAdmin, sessionKey } from './scope.js';
import type { MemoryStore } from './store.js';
import { tokens } from './text.js';

const coded = errorsFor('memory');

/** Entries embedded per embedding call; a recall embeds at most one such batch itself (the newest missing). */
const EMBED_BATCH = 256;
/** After a failed embedding call, recall goes on by keyword and the embedding is tried again after this pause. */
const EMBED_RETRY_MS = 60_000;
/** The hybrid score's weights (the knowledge store's: plugins/knowledge/src/search.ts). */
const VECTOR_WEIGHT = 0.6;
const KEYWORD_WEIGHT = 0.4;

export interface RecallDeps {
  ctx: PluginContext;
  store: MemoryStore;
  index: KeywordIndex;
  embedder(): LlmCapability | undefined;
  /** Tracks background work (the plugin's stop waits for it). */
  track<T>(p: Promise<T>): Promise<T>;
}

export class MemoryRecall {
  /**
   * Vectors of long-memory sections, keyed by the text embedded; only the current sections' are kept (each edit of
   * a section makes a new key, so without pruning every edit of USER.md, LEARNING.md or JOURNAL.md left one behind).
   */
  private longVectors = new Map<string, { model: string; vec: Float32Array }>();
  /** The background embedding of entries without a vector, while it runs. */
  private filling: Promise<void> | undefined;
  private stopped = false;
  /** When embedding entries last failed (not tried again for a minute: recalls go on by keyword for them). */
  private fillFailedAt = -Infinity;
  /** `model:store version` at which every entry had a vector of that model. */
  private complete = '';
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

  /** How many long-memory section vectors are cached (tests). */
  get longVectorCount(): number {
    return this.longVectors.size;
  }

  /** Ends the background embedding after its current batch (the plugin stops). */
  stop(): void {
    this.stopped = true;
  }

  /** Entries without a vector of `model`, newest first. */
  private missing(model: string): MemoryEntry[] {
    const out: MemoryEntry[] = [];
    for (const list of [this.d.store.short, this.d.store.episodic])
      for (const e of list) if (this.d.store.vectors.get(e.id)?.model !== model) out.push(e);
    return out.sort((a, b) => (a.timestamp < b.timestamp ? 1 : a.timestamp > b.timestamp ? -1 : 0));
  }

  /** Embeds `entries` (one call) and keeps their vectors; false when the answer came from another model. */
  private async embedEntries(emb: LlmCapability, model: string, entries: MemoryEntry[], signal?: AbortSignal): Promise<boolean> {
    const r = await emb.embed({ texts: entries.map((e) => e.content), ...(signal ? { signal } : {}) });
    if (!r || `${r.provider}/${r.model}` !== model) return false;
    entries.forEach((e, j) => r.vectors[j] && this.d.store.setVector(e.id, { model, vec: unit(r.vectors[j]) }));
    return true;
  }

  /** Starts embedding every entry still without a vector of `model`, in the background, a batch at a time. */
  private fill(emb: LlmCapability, model: string): void {
    if (this.filling || this.stopped || performance.now() - this.fillFailedAt < EMBED_RETRY_MS) return;
    const run = async (): Promise<void> => {
      while (!this.stopped) {
        const batch = this.missing(model).slice(0, EMBED_BATCH);
        if (!batch.length) return;
        // A turn of the event loop between batches: recalls and the agent go first.
        await new Promise((r) => setImmediate(r));
        if (this.stopped) return;
        try {
          if (!(await this.embedEntries(emb, model, batch))) return; // the model changed: the next recall starts over
        } catch (e) {
          this.fillFailedAt = performance.now();
          this.d.ctx.log.warn(
            `memory: embedding older memories failed (${errorMessage(e)}); they are still found by keyword, and the next recall after a minute tries again.`,
          );
          return;
        }
      }
    };
    this.filling = this.d.track(run()).finally(() => {
      this.filling = undefined;
    });
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
        const allLong = LONG_FILES.every((f) => scope.long.includes(f));
        return { mode: 'vector', hits: await this.vectorRecall(emb, query, limit, scope.entries, sections, allLong, signal) };
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
    allLong: boolean,
    signal?: AbortSignal,
  ): Promise<RecallHit[]> {
    const qr = await emb.embed({ texts: [query], ...(signal ? { signal } : {}) });
    if (!qr?.vectors[0]) throw coded('KEEL_E_PROVIDER_FAILED', 'no embedding for the query');
    const model = `${qr.provider}/${qr.model}`;
    const qv = unit(qr.vectors[0]);
    const all = [...this.d.store.short, ...this.d.store.episodic];
    // The newest entries without a vector are embedded now (one batch at most: a memory written a moment ago is
    // found by meaning at once); any older ones in the background, and by their words meanwhile.
    // (While the background embedding runs, it has them next.) Looked at again only after the store changed.
    const key = `${model}:${this.d.store.version}`;
    if (!this.filling && this.complete !== key) {
      const missing = this.missing(model);
      if (!missing.length) this.complete = key;
      else {
        try {
          if (performance.now() - this.fillFailedAt >= EMBED_RETRY_MS)
            await this.embedEntries(emb, model, missing.slice(0, EMBED_BATCH), signal);
        } catch (e) {
          if (signal?.aborted) throw e;
          this.fillFailedAt = performance.now();
          this.d.ctx.log.warn(`memory: embedding new memories failed (${errorMessage(e)}); they are found by keyword meanwhile.`);
        }
        if (missing.length > EMBED_BATCH) this.fill(emb, model);
      }
    }
    const longs = sections.map((s) => ({ s, text: `${s.heading}\n${s.body}`.slice(0, 2000) }));
    // Sections edited or removed since: their vectors go (only when every long file was read, so a recall limited
    // to some files does not drop the others' vectors).
    if (allLong) {
      const current = new Set(longs.map((l) => l.text));
      for (const text of this.longVectors.keys()) if (!current.has(text)) this.longVectors.delete(text);
    }
    const longMissing = longs.filter(({ text }) => this.longVectors.get(text)?.model !== model);
    if (longMissing.length) {
      const r = await emb.embed({ texts: longMissing.map((l) => l.text), ...(signal ? { signal } : {}) });
      longMissing.forEach((l, j) => r?.vectors[j] && this.longVectors.set(l.text, { model, vec: unit(r.vectors[j]) }));
    }
    const q = tokens(query);
    const words = q.length ? this.d.index.match(q) : new Map<string, number>();
    const fused = (cosine: number, keyword: number) => VECTOR_WEIGHT * Math.max(0, cosine) + KEYWORD_WEIGHT * keyword;
    const top: RecallHit[] = [];
    const consider = (h: RecallHit): void => {
      if (h.score <= 0) return;
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
    const scored = new Set<string>();
    for (let i = 0; i < scores.length; i++) {
      const e = m.entries[i]!;
      const kw = words.size ? (words.get(e.id) ?? 0) : 0;
      const s = fused(scores[i]!, kw);
      if (kw) scored.add(e.id);
      if (top.length >= limit && s <= top.at(-1)!.score) continue;
      if (allowed(e)) consider(hitOf(e, s));
    }
    // Matched by words but without a vector yet (being embedded): nothing is known of their meaning, so they rank
    // by their keyword share alone, as keyword search would rank them (a full match scores 1).
    if (words.size > scored.size)
      for (const e of all) {
        const kw = words.get(e.id);
        if (kw && !scored.has(e.id) && allowed(e)) consider(hitOf(e, kw));
      }
    for (const { s, text } of longs) {
      const v = this.longVectors.get(text);
      const cosine = v && v.vec.length === dim ? dot(qv, v.vec) : 0;
      consider(hitOf(longEntry(s), fused(cosine, q.length ? coverage(q, `${s.heading} ${s.body}`) : 0)));
    }
    return top;
  }
}
