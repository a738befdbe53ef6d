/**
 * The storage interface of the knowledge store: the skills speak only to this, so a server-backed store
 * (pgvector, Qdrant, LanceDB...) can replace the embedded SQLite one later.
 */

export type KnowledgeFormat = 'text' | 'markdown' | 'csv' | 'json' | 'jsonl' | 'code';
export const FORMATS: readonly KnowledgeFormat[] = ['text', 'markdown', 'csv', 'json', 'jsonl', 'code'];

/** A document as `rag_list` shows it. */
export interface DocumentRecord {
  id: string;
  source: string;
  title: string;
  collection: string;
  tags: string[];
  format: KnowledgeFormat;
  chunks: number;
  /** Extra facts (`url`, `fetchedAt`, `contentType` for rag_ingest_url; `path`, `bytes` for files). */
  metadata: Record<string, unknown>;
  /** Embedding model of its chunks' vectors, if they have any. */
  embeddingModel?: string;
  createdAt: string;
  updatedAt: string;
}

export interface NewDocument {
  source: string;
  title: string;
  collection: string;
  tags: string[];
  format: KnowledgeFormat;
  metadata: Record<string, unknown>;
}

export interface NewChunk {
  content: string;
  /** Unit or not: the store normalizes. */
  vector?: Float32Array | number[];
}

export interface ChunkRecord {
  id: number;
  documentId: string;
  position: number;
  content: string;
  source: string;
  title: string;
  collection: string;
  tags: string[];
}

export interface SearchFilter {
  collection?: string;
  /** Documents carrying every one of these tags. */
  tags?: string[];
}

export interface KeywordHit {
  chunkId: number;
  /** bm25 relevance, higher is better (SQLite's bm25() negated). */
  bm25: number;
}

export interface KnowledgeStore {
  /** Inserts the document or, when (collection, source) exists, replaces its chunks atomically; keeps its id. */
  upsert(doc: NewDocument, chunks: NewChunk[], embeddingModel?: string): Promise<{ document: DocumentRecord; replaced: boolean }>;
  list(collection?: string): Promise<DocumentRecord[]>;
  get(documentId: string): Promise<DocumentRecord | undefined>;
  deleteDocument(documentId: string): Promise<{ documents: number; chunks: number }>;
  deleteCollection(collection: string): Promise<{ documents: number; chunks: number }>;
  keywordSearch(query: string, k: number, filter: SearchFilter): Promise<KeywordHit[]>;
  /** Cosine of the k nearest chunks embedded with `model`. */
  vectorSearch(
    vector: ArrayLike<number>,
    model: string,
    k: number,
    filter: SearchFilter,
  ): Promise<Array<{ chunkId: number; cosine: number }>>;
  /** Cosine between `vector` and the given chunks' vectors (model `model`), where they have one. */
  cosines(vector: ArrayLike<number>, model: string, chunkIds: number[]): Promise<Map<number, number>>;
  chunks(ids: number[]): Promise<ChunkRecord[]>;
  /** Chunks with no vector of `model` (never embedded, or by another model), oldest first. */
  staleChunks(model: string, limit: number): Promise<Array<{ id: number; content: string }>>;
  countStale(model: string): Promise<number>;
  /** Stores vectors of `model` for chunks; returns how many were stored (zero vectors and deleted chunks are skipped). */
  setVectors(model: string, vectors: Array<{ chunkId: number; content: string; vector: ArrayLike<number> }>): Promise<number>;
  /** Optional warm-up (load in-memory indexes) before the first search. */
  warm?(): Promise<void>;
  stats(): Promise<{ documents: number; chunks: number; embedded: Record<string, number> }>;
  close(): Promise<void>;
}
