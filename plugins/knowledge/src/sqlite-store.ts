/**
 * The embedded knowledge store: one SQLite file (node:sqlite) in WAL mode with synchronous=FULL.
 * - `documents` (one row per (collection, source)), `doc_tags`, `chunks` (text, embedding model, Float32 BLOB);
 * - `chunks_fts`, an FTS5 index (porter + unicode61) kept in step by triggers, ranked with bm25();
 * - each vector is kept as its int8 code + scale (`code`, `scale`: 388 bytes at 384 dims instead of 1,536 for
 *   Float32; cosine error about 1e-3), which `VectorIndex` loads (lazily, per model) and searches in memory.
 * Every write is one transaction: a crash leaves the last committed state.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type {
  ChunkRecord,
  DocumentRecord,
  KeywordHit,
  KnowledgeFormat,
  KnowledgeStore,
  NewChunk,
  NewDocument,
  SearchFilter,
} from './types.js';
import { VectorIndex, quantize } from './vector-index.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS documents (
  rid INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  collection TEXT NOT NULL,
  source TEXT NOT NULL,
  title TEXT NOT NULL,
  tags TEXT NOT NULL,
  format TEXT NOT NULL,
  metadata TEXT NOT NULL,
  chunks INTEGER NOT NULL,
  embedding_model TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  UNIQUE (collection, source)
);
CREATE TABLE IF NOT EXISTS doc_tags (tag TEXT NOT NULL, doc INTEGER NOT NULL, PRIMARY KEY (tag, doc)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS doc_tags_doc ON doc_tags (doc);
CREATE TABLE IF NOT EXISTS chunks (
  id INTEGER PRIMARY KEY,
  doc INTEGER NOT NULL,
  position INTEGER NOT NULL,
  content TEXT NOT NULL,
  terms TEXT NOT NULL DEFAULT '',
  model TEXT,
  code BLOB,
  scale REAL
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks (doc);
-- Covering index for filtered keyword search: chunk id -> document without reading the (large) chunk row.
CREATE INDEX IF NOT EXISTS chunks_id_doc ON chunks (id, doc);
CREATE INDEX IF NOT EXISTS chunks_model ON chunks (model);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5 (content, terms, content='chunks', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2');
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
  INSERT INTO chunks_fts (rowid, content, terms) VALUES (new.id, new.content, new.terms);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
  INSERT INTO chunks_fts (chunks_fts, rowid, content, terms) VALUES ('delete', old.id, old.content, old.terms);
END;
`;

interface DocRow {
  rid: number;
  id: string;
  collection: string;
  source: string;
  title: string;
  tags: string;
  format: string;
  metadata: string;
  chunks: number;
  embedding_model: string | null;
  created_at: string;
  updated_at: string;
}

function toRecord(r: DocRow): DocumentRecord {
  return {
    id: r.id,
    source: r.source,
    title: r.title,
    collection: r.collection,
    tags: JSON.parse(r.tags) as string[],
    format: r.format as KnowledgeFormat,
    chunks: r.chunks,
    metadata: JSON.parse(r.metadata) as Record<string, unknown>,
    ...(r.embedding_model ? { embeddingModel: r.embedding_model } : {}),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function codeBlob(code: Int8Array): Uint8Array {
  return new Uint8Array(code.buffer, code.byteOffset, code.byteLength);
}

/** Extra searchable words: the parts of camelCase identifiers (`lightLighthouse` -> `light Lighthouse`). */
export function identifierParts(text: string): string {
  const parts = new Set<string>();
  for (const id of text.match(/\b[\p{L}\p{N}]*\p{Ll}\p{Lu}[\p{L}\p{N}]*/gu) ?? []) {
    for (const p of id.split(/(?<=\p{Ll})(?=\p{Lu})|(?<=\p{Lu})(?=\p{Lu}\p{Ll})/u)) if (p.length > 1) parts.add(p);
    if (parts.size > 500) break;
  }
  return [...parts].join(' ');
}

/** FTS5 query: every word of the question, OR-ed and quoted (so no FTS syntax leaks in). */
export function ftsQuery(query: string): string | undefined {
  const words = [...new Set((query.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? []).filter((w) => w.length > 1 || /\p{N}/u.test(w)))].slice(
    0,
    32,
  );
  return words.length ? words.map((w) => `"${w}"`).join(' OR ') : undefined;
}

export class SqliteKnowledgeStore implements KnowledgeStore {
  private readonly db: DatabaseSync;
  private index: VectorIndex | undefined;
  /** `PRAGMA data_version` when the index was loaded: another process's writes make it reload. */
  private indexVersion = -1;
  private readonly stmts = new Map<string, StatementSync>();

  constructor(readonly file: string) {
    mkdirSync(dirname(file), { recursive: true });
    this.db = new DatabaseSync(file);
    this.db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON;');
    this.db.exec(SCHEMA);
  }

  private st(sql: string): StatementSync {
    let s = this.stmts.get(sql);
    if (!s) this.stmts.set(sql, (s = this.db.prepare(sql)));
    return s;
  }

  private tx<T>(fn: () => T): T {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const r = fn();
      this.db.exec('COMMIT');
      return r;
    } catch (e) {
      this.db.exec('ROLLBACK');
      throw e;
    }
  }

  private docRow(where: string, ...args: Array<string | number>): DocRow | undefined {
    return this.st(`SELECT * FROM documents WHERE ${where}`).get(...args) as DocRow | undefined;
  }

  async upsert(doc: NewDocument, chunks: NewChunk[], embeddingModel?: string): Promise<{ document: DocumentRecord; replaced: boolean }> {
    const now = new Date().toISOString();
    const inserted: Array<{ id: number; code: Int8Array; scale: number }> = [];
    let removed: number[] = [];
    const { rid, replaced } = this.tx(() => {
      const old = this.docRow('collection = ? AND source = ?', doc.collection, doc.source);
      const hasVectors = Boolean(embeddingModel) && chunks.some((c) => c.vector);
      const model = hasVectors ? embeddingModel! : null;
      let rid: number;
      if (old) {
        rid = old.rid;
        removed = (this.st('SELECT id FROM chunks WHERE doc = ?').all(rid) as Array<{ id: number }>).map((r) => r.id);
        this.st('DELETE FROM chunks WHERE doc = ?').run(rid);
        this.st('DELETE FROM doc_tags WHERE doc = ?').run(rid);
        this.st(
          'UPDATE documents SET title = ?, tags = ?, format = ?, metadata = ?, chunks = ?, embedding_model = ?, updated_at = ? WHERE rid = ?',
        ).run(doc.title, JSON.stringify(doc.tags), doc.format, JSON.stringify(doc.metadata), chunks.length, model, now, rid);
      } else {
        const r = this.st(
          'INSERT INTO documents (id, collection, source, title, tags, format, metadata, chunks, embedding_model, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        ).run(
          `doc_${randomUUID().replaceAll('-', '').slice(0, 16)}`,
          doc.collection,
          doc.source,
          doc.title,
          JSON.stringify(doc.tags),
          doc.format,
          JSON.stringify(doc.metadata),
          chunks.length,
          model,
          now,
          now,
        );
        rid = Number(r.lastInsertRowid);
      }
      for (const tag of new Set(doc.tags)) this.st('INSERT INTO doc_tags (tag, doc) VALUES (?, ?)').run(tag, rid);
      const ins = this.st('INSERT INTO chunks (doc, position, content, terms, model, code, scale) VALUES (?, ?, ?, ?, ?, ?, ?)');
      chunks.forEach((c, i) => {
        const q = c.vector && model ? quantize(c.vector) : undefined;
        const r = ins.run(rid, i, c.content, identifierParts(c.content), q ? model : null, q ? codeBlob(q.code) : null, q ? q.scale : null);
        if (q) inserted.push({ id: Number(r.lastInsertRowid), code: q.code, scale: q.scale });
      });
      return { rid, replaced: Boolean(old) };
    });
    if (this.index) {
      for (const id of removed) this.index.remove(id);
      if (embeddingModel === this.index.model) for (const c of inserted) this.index.addCode(c.id, rid, c.code, c.scale);
    }
    return { document: toRecord(this.docRow('rid = ?', rid)!), replaced };
  }

  async list(collection?: string): Promise<DocumentRecord[]> {
    const rows = (collection === undefined
      ? this.st('SELECT * FROM documents ORDER BY collection, created_at, rid').all()
      : this.st('SELECT * FROM documents WHERE collection = ? ORDER BY created_at, rid').all(collection)) as unknown as DocRow[];
    return rows.map(toRecord);
  }

  async get(documentId: string): Promise<DocumentRecord | undefined> {
    const r = this.docRow('id = ?', documentId);
    return r && toRecord(r);
  }

  private deleteWhere(where: string, arg: string): { documents: number; chunks: number } {
    const rids = (this.st(`SELECT rid FROM documents WHERE ${where}`).all(arg) as Array<{ rid: number }>).map((r) => r.rid);
    const removed: number[] = [];
    this.tx(() => {
      for (const rid of rids) {
        for (const r of this.st('SELECT id FROM chunks WHERE doc = ?').all(rid) as Array<{ id: number }>) removed.push(r.id);
        this.st('DELETE FROM chunks WHERE doc = ?').run(rid);
        this.st('DELETE FROM doc_tags WHERE doc = ?').run(rid);
        this.st('DELETE FROM documents WHERE rid = ?').run(rid);
      }
    });
    if (this.index) for (const id of removed) this.index.remove(id);
    return { documents: rids.length, chunks: removed.length };
  }

  async deleteDocument(documentId: string): Promise<{ documents: number; chunks: number }> {
    return this.deleteWhere('id = ?', documentId);
  }

  async deleteCollection(collection: string): Promise<{ documents: number; chunks: number }> {
    return this.deleteWhere('collection = ?', collection);
  }

  /** SQL condition on `d` (documents) for a filter, and its arguments. */
  private filterSql(filter: SearchFilter): { sql: string; args: Array<string | number> } {
    const parts: string[] = [];
    const args: Array<string | number> = [];
    if (filter.collection !== undefined) {
      parts.push('d.collection = ?');
      args.push(filter.collection);
    }
    const tags = [...new Set(filter.tags ?? [])];
    // One EXISTS per tag (a correlated primary-key probe): the planner keeps the FTS scan outermost with it.
    for (const tag of tags) {
      parts.push('EXISTS (SELECT 1 FROM doc_tags t WHERE t.tag = ? AND t.doc = d.rid)');
      args.push(tag);
    }
    return { sql: parts.length ? parts.join(' AND ') : '1', args };
  }

  async keywordSearch(query: string, k: number, filter: SearchFilter): Promise<KeywordHit[]> {
    const q = ftsQuery(query);
    if (!q || k <= 0) return [];
    let rows: Array<{ id: number; s: number }>;
    if (filter.collection === undefined && !filter.tags?.length) {
      // Without a filter the FTS table alone answers (about 4x faster than with the joins at 100,000 chunks).
      rows = this.st('SELECT rowid AS id, bm25(chunks_fts) AS s FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY s LIMIT ?').all(
        q,
        k,
      ) as typeof rows;
    } else {
      const f = this.filterSql(filter);
      rows = this.st(
        `SELECT f.rowid AS id, bm25(chunks_fts) AS s FROM chunks_fts f JOIN chunks c INDEXED BY chunks_id_doc ON c.id = f.rowid JOIN documents d ON d.rid = c.doc
         WHERE chunks_fts MATCH ? AND ${f.sql} ORDER BY s LIMIT ?`,
      ).all(q, ...f.args, k) as typeof rows;
    }
    return rows.map((r) => ({ chunkId: r.id, bm25: -r.s }));
  }

  /** Changes when another connection (another Keel process on this home) commits to the file. */
  private dataVersion(): number {
    return (this.st('PRAGMA data_version').get() as { data_version: number }).data_version;
  }

  private indexFor(model: string): VectorIndex | undefined {
    const version = this.dataVersion();
    if (this.index?.model === model && version === this.indexVersion) return this.index;
    this.index = undefined;
    this.indexVersion = version;
    let index: VectorIndex | undefined;
    const rows = this.st('SELECT id, doc, code, scale FROM chunks WHERE model = ? AND code IS NOT NULL').iterate(model) as Iterable<{
      id: number;
      doc: number;
      code: Uint8Array;
      scale: number;
    }>;
    for (const r of rows) {
      const code = new Int8Array(r.code.buffer, r.code.byteOffset, r.code.byteLength);
      index ??= new VectorIndex(model, code.length);
      index.addCode(r.id, r.doc, code, r.scale);
    }
    this.index = index;
    return index;
  }

  /** Loads the vector index of the model most chunks are embedded with (a warm-up before the first search). */
  async warm(): Promise<void> {
    const top = this.st('SELECT model, count(*) AS n FROM chunks WHERE model IS NOT NULL GROUP BY model ORDER BY n DESC LIMIT 1').get() as
      | { model: string }
      | undefined;
    if (top && this.db.isOpen) this.indexFor(top.model);
  }

  async vectorSearch(
    vector: ArrayLike<number>,
    model: string,
    k: number,
    filter: SearchFilter,
  ): Promise<Array<{ chunkId: number; cosine: number }>> {
    const index = this.indexFor(model);
    if (!index) return [];
    let allow: ((doc: number) => boolean) | undefined;
    if (filter.collection !== undefined || filter.tags?.length) {
      const f = this.filterSql(filter);
      const ok = new Set(
        (this.st(`SELECT d.rid FROM documents d WHERE ${f.sql}`).all(...f.args) as Array<{ rid: number }>).map((r) => r.rid),
      );
      allow = (doc) => ok.has(doc);
    }
    return index.search(vector, k, allow);
  }

  async cosines(vector: ArrayLike<number>, model: string, chunkIds: number[]): Promise<Map<number, number>> {
    const out = new Map<number, number>();
    const index = this.indexFor(model);
    if (!index) return out;
    // A tiny index of just these chunks gives the same int8 cosine as the big one.
    const small = new VectorIndex(model, index.dim);
    const sel = this.st('SELECT code, scale FROM chunks WHERE id = ? AND model = ?');
    for (const id of chunkIds) {
      const r = sel.get(id, model) as { code: Uint8Array | null; scale: number | null } | undefined;
      if (r?.code && r.scale) small.addCode(id, 0, new Int8Array(r.code.buffer, r.code.byteOffset, r.code.byteLength), r.scale);
    }
    for (const h of small.search(vector, chunkIds.length)) out.set(h.chunkId, h.cosine);
    return out;
  }

  async chunks(ids: number[]): Promise<ChunkRecord[]> {
    const sel = this.st(
      'SELECT c.id, c.position, c.content, d.id AS doc_id, d.source, d.title, d.collection, d.tags FROM chunks c JOIN documents d ON d.rid = c.doc WHERE c.id = ?',
    );
    const out: ChunkRecord[] = [];
    for (const id of ids) {
      const r = sel.get(id) as
        | { id: number; position: number; content: string; doc_id: string; source: string; title: string; collection: string; tags: string }
        | undefined;
      if (r)
        out.push({
          id: r.id,
          documentId: r.doc_id,
          position: r.position,
          content: r.content,
          source: r.source,
          title: r.title,
          collection: r.collection,
          tags: JSON.parse(r.tags) as string[],
        });
    }
    return out;
  }

  async staleChunks(model: string, limit: number): Promise<Array<{ id: number; content: string }>> {
    return this.st('SELECT id, content FROM chunks WHERE model IS NOT ? ORDER BY id LIMIT ?').all(model, limit) as Array<{
      id: number;
      content: string;
    }>;
  }

  async countStale(model: string): Promise<number> {
    return (this.st('SELECT count(*) AS n FROM chunks WHERE model IS NOT ?').get(model) as { n: number }).n;
  }

  async setVectors(model: string, vectors: Array<{ chunkId: number; content: string; vector: ArrayLike<number> }>): Promise<number> {
    const done = new Map<number, { doc: number; code: Int8Array; scale: number }>();
    this.tx(() => {
      // Only if the chunk still holds the text that was embedded: while the model worked, the document may have
      // been deleted and its chunk ids given to new text (SQLite reuses the highest ids).
      const upd = this.st('UPDATE chunks SET model = ?, code = ?, scale = ? WHERE id = ? AND content = ? RETURNING doc');
      for (const v of vectors) {
        const q = quantize(v.vector);
        if (!q) continue;
        const r = upd.get(model, codeBlob(q.code), q.scale, v.chunkId, v.content) as { doc: number } | undefined;
        if (r) done.set(v.chunkId, { doc: r.doc, ...q });
      }
      for (const doc of new Set([...done.values()].map((d) => d.doc))) {
        this.st(
          'UPDATE documents SET embedding_model = CASE WHEN (SELECT count(*) FROM chunks WHERE doc = ?1 AND model IS NOT ?2) = 0 THEN ?2 ELSE embedding_model END WHERE rid = ?1',
        ).run(doc, model);
      }
    });
    if (this.index?.model === model) {
      for (const [id, d] of done) this.index.addCode(id, d.doc, d.code, d.scale);
    } else if (this.index) {
      for (const id of done.keys()) this.index.remove(id);
    }
    return done.size;
  }

  async stats(): Promise<{ documents: number; chunks: number; embedded: Record<string, number> }> {
    const documents = (this.st('SELECT count(*) AS n FROM documents').get() as { n: number }).n;
    const chunks = (this.st('SELECT count(*) AS n FROM chunks').get() as { n: number }).n;
    const embedded: Record<string, number> = {};
    for (const r of this.st('SELECT model, count(*) AS n FROM chunks WHERE model IS NOT NULL GROUP BY model').all() as Array<{
      model: string;
      n: number;
    }>)
      embedded[r.model] = r.n;
    return { documents, chunks, embedded };
  }

  async close(): Promise<void> {
    this.index = undefined;
    if (this.db.isOpen) this.db.close();
  }
}
