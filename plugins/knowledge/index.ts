/**
 * Knowledge store plugin entry: the six rag_* skills over a `KnowledgeStore` (embedded SQLite by default).
 * Embeddings come from the `llm` capability when it can embed; without it everything works by keyword.
 */
import { errorsFor } from '../../sdk/errors.js';
import { readFile, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { definePlugin, type LlmCapability, type PluginContext, type SkillArgs, errorMessage } from '../../sdk/index.js';
import manifest from './manifest.js';
import { chunk, formatFromName } from './src/chunk.js';
import { ingestCommand } from './src/ingest-command.js';
import { searchKnowledge } from './src/search.js';
import { SqliteKnowledgeStore } from './src/sqlite-store.js';
import type { DocumentRecord, KnowledgeFormat, KnowledgeStore, NewChunk } from './src/types.js';

const coded = errorsFor('knowledge');

/** Texts per embedding request. */
export const EMBED_BATCH = 64;
/** Chunks re-embedded per background round (see `reembed`). */
const REEMBED_BATCH = 256;

type IngestArgs = SkillArgs<typeof manifest, 'rag_ingest'>;

const message = errorMessage;

function cleanTags(tags: string[] | undefined): string[] {
  return [...new Set((tags ?? []).map((t) => t.trim()).filter(Boolean))];
}

export class Knowledge {
  private background: Promise<void> | undefined;
  private readonly abort = new AbortController();

  constructor(
    readonly store: KnowledgeStore,
    private readonly ctx: Pick<PluginContext<typeof manifest>, 'use' | 'log' | 'config'>,
  ) {}

  private llm(): LlmCapability | undefined {
    const llm = this.ctx.use('llm');
    return llm && typeof llm.canEmbed === 'function' && llm.canEmbed() ? llm : undefined;
  }

  private async embed(llm: LlmCapability, texts: string[], signal?: AbortSignal): Promise<{ vectors: number[][]; model: string }> {
    const vectors: number[][] = [];
    let model = '';
    for (let i = 0; i < texts.length; i += EMBED_BATCH) {
      const batch = texts.slice(i, i + EMBED_BATCH);
      const r = await llm.embed({ texts: batch, ...(signal ? { signal } : {}) });
      if (!r) throw coded('KEEL_E_NOT_CONFIGURED', 'no provider offers embeddings now');
      if (r.vectors.length !== batch.length)
        throw coded('KEEL_E_PROVIDER_FAILED', `the embedding provider returned ${r.vectors.length} vectors for ${batch.length} texts`);
      if (model && r.model !== model)
        throw coded('KEEL_E_PROVIDER_FAILED', `the embedding model changed during the request (${model}, then ${r.model})`);
      model = r.model;
      vectors.push(...r.vectors);
    }
    return { vectors, model };
  }

  async ingest(a: IngestArgs, metadata: Record<string, unknown> = {}, signal?: AbortSignal): Promise<Record<string, unknown>> {
    const format: KnowledgeFormat = a.format ?? formatFromName(a.source) ?? 'text';
    const collection = a.collection?.trim() || 'default';
    const texts = chunk(a.content, format);
    if (!texts.length) throw coded('KEEL_E_INVALID_ARGUMENT', `the content of "${a.source}" is empty: nothing to store`);
    const title = a.title?.trim() || basename(a.source.replace(/[?#].*$/, '').replace(/\/+$/, '')) || a.source;
    let chunks: NewChunk[] = texts.map((content) => ({ content }));
    let model: string | undefined;
    let warning: string | undefined;
    const llm = this.llm();
    if (llm) {
      try {
        const r = await this.embed(llm, texts, signal);
        chunks = texts.map((content, i) => ({ content, vector: r.vectors[i]! }));
        model = r.model;
      } catch (e) {
        warning = `stored without embeddings (${message(e)}); it is found by keyword until it is re-embedded`;
        this.ctx.log.warn(`rag: embedding "${a.source}" failed: ${message(e)}`);
      }
    }
    const { document, replaced } = await this.store.upsert(
      { source: a.source, title, collection, tags: cleanTags(a.tags), format, metadata },
      chunks,
      model,
    );
    return {
      document_id: document.id,
      source: document.source,
      collection: document.collection,
      title: document.title,
      format: document.format,
      tags: document.tags,
      chunks: document.chunks,
      replaced,
      embedded: Boolean(model),
      ...(model ? { embeddingModel: model } : {}),
      ...(warning ? { warning } : {}),
    };
  }

  async ingestFile(a: { file_path: string; collection?: string; tags?: string[]; title?: string }): Promise<Record<string, unknown>> {
    const raw = a.file_path.trim();
    const path = resolve(raw === '~' || raw.startsWith('~/') ? join(homedir(), raw.slice(1)) : raw);
    const info = await stat(path).catch(() => undefined);
    if (!info) throw coded('KEEL_E_NOT_FOUND', `file not found: ${path}`);
    if (info.isDirectory()) throw coded('KEEL_E_INVALID_ARGUMENT', `${path} is a directory; give the path of one file`);
    if (!info.isFile()) throw coded('KEEL_E_INVALID_ARGUMENT', `${path} is not a regular file`);
    const max = this.ctx.config.get('knowledgeMaxFileBytes');
    if (info.size > max)
      throw coded(
        'KEEL_E_INVALID_ARGUMENT',
        `${path} is ${info.size} bytes, more than knowledgeMaxFileBytes (${max}); split it or raise the limit`,
      );
    const buf = await readFile(path);
    if (buf.subarray(0, 8192).includes(0))
      throw coded('KEEL_E_INVALID_ARGUMENT', `${path} looks like a binary file; only text files can be ingested`);
    const r = await this.ingest(
      {
        content: buf.toString('utf8'),
        source: path,
        format: formatFromName(path) ?? 'text',
        ...(a.collection ? { collection: a.collection } : {}),
        ...(a.tags ? { tags: a.tags } : {}),
        ...(a.title ? { title: a.title } : {}),
      },
      { path, bytes: info.size, modifiedAt: info.mtime.toISOString() },
    );
    return { ...r, bytes: info.size };
  }

  async ingestUrl(
    a: { url: string; collection?: string; tags?: string[]; title?: string },
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>> {
    let url: URL;
    try {
      url = new URL(a.url.trim());
    } catch {
      throw coded('KEEL_E_INVALID_ARGUMENT', `"${a.url}" is not a valid URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw coded('KEEL_E_INVALID_ARGUMENT', `only http and https URLs can be ingested, not ${url.protocol}`);
    const web = this.ctx.use('web');
    if (!web)
      throw coded(
        'KEEL_E_NOT_CONFIGURED',
        'rag_ingest_url needs the web plugin (capability "web"), which is not loaded; enable the plugin "web" (see `keel plugins`)',
      );
    const max = this.ctx.config.get('knowledgeMaxFileBytes');
    const res = await web.fetch(url.href, {
      maxBytes: max,
      accept: 'text/html, text/markdown, text/plain, application/json, */*;q=0.5',
      ...(signal ? { signal } : {}),
    });
    if (res.status >= 400) throw coded('KEEL_E_PROVIDER_FAILED', `fetching ${url.href} failed with HTTP status ${res.status}`);
    const fetchedAt = new Date().toISOString();
    const type = res.contentType.split(';')[0]!.trim().toLowerCase();
    let content = res.body;
    let format: KnowledgeFormat;
    let title = a.title;
    if (type === 'text/html' || type === 'application/xhtml+xml' || (!type && /^\s*<(!doctype html|html)/i.test(content))) {
      const page = web.extract(res.body, res.url);
      content = page.text;
      format = 'text';
      title ??= page.title || undefined;
    } else if (type === 'application/json' || type.endsWith('+json')) format = 'json';
    else if (type === 'application/x-ndjson' || type === 'application/jsonl' || type === 'application/x-jsonlines') format = 'jsonl';
    else if (type === 'text/markdown' || type === 'text/x-markdown') format = 'markdown';
    else if (type === 'text/csv') format = 'csv';
    else if (type.startsWith('text/') || !type) format = formatFromName(url.pathname) ?? 'text';
    else
      throw coded('KEEL_E_INVALID_ARGUMENT', `${url.href} is ${type}, which cannot be ingested (HTML, text, markdown, CSV and JSON can)`);
    const r = await this.ingest(
      {
        content,
        source: url.href,
        format,
        ...(a.collection ? { collection: a.collection } : {}),
        ...(a.tags ? { tags: a.tags } : {}),
        ...(title ? { title } : {}),
      },
      {
        url: url.href,
        finalUrl: res.url,
        fetchedAt,
        contentType: res.contentType,
        status: res.status,
        ...(res.truncated ? { truncated: true } : {}),
      },
      signal,
    );
    return { ...r, url: url.href, fetchedAt, ...(res.truncated ? { truncated: true } : {}) };
  }

  async search(
    a: { query: string; limit?: number; collection?: string; tags?: string[] },
    signal?: AbortSignal,
  ): Promise<Record<string, unknown>> {
    const limit = a.limit ?? 10;
    const filter = { ...(a.collection ? { collection: a.collection } : {}), ...(a.tags?.length ? { tags: cleanTags(a.tags) } : {}) };
    const llm = this.llm();
    let embedding: { vector: number[]; model: string } | undefined;
    let notice: string | undefined;
    if (llm) {
      try {
        const r = await llm.embed({ texts: [a.query], ...(signal ? { signal } : {}) });
        if (r?.vectors[0]) embedding = { vector: r.vectors[0], model: r.model };
      } catch (e) {
        notice = `keyword search only: embedding the query failed (${message(e)})`;
      }
    }
    const results = await searchKnowledge(this.store, { query: a.query, limit, filter, ...(embedding ? { embedding } : {}) });
    if (embedding) {
      const stale = await this.store.countStale(embedding.model);
      if (stale) {
        notice = `${stale} chunk(s) have no embedding from ${embedding.model} (stored without embeddings or with another model); they are found by keyword while they are re-embedded in the background`;
        this.reembed(embedding.model);
      }
    }
    return {
      query: a.query,
      mode: embedding ? 'hybrid' : 'keyword',
      ...(embedding ? { embeddingModel: embedding.model } : {}),
      results,
      ...(notice ? { notice } : {}),
    };
  }

  /** Re-embeds stale chunks with `model` in the background, one at a time. */
  reembed(model: string): Promise<void> {
    this.background ??= (async () => {
      try {
        for (;;) {
          const llm = this.llm();
          if (!llm || this.abort.signal.aborted) return;
          const stale = await this.store.staleChunks(model, REEMBED_BATCH);
          if (!stale.length) return;
          const r = await this.embed(
            llm,
            stale.map((s) => s.content),
            this.abort.signal,
          );
          if (r.model !== model) return;
          const stored = await this.store.setVectors(
            model,
            stale.map((s, i) => ({ chunkId: s.id, content: s.content, vector: r.vectors[i]! })),
          );
          if (!stored) return; // nothing usable came back (e.g. zero vectors): stop rather than loop
        }
      } catch (e) {
        if (!this.abort.signal.aborted) this.ctx.log.warn(`rag: re-embedding with ${model} failed: ${message(e)}`);
      } finally {
        this.background = undefined;
      }
    })();
    return this.background;
  }

  async list(a: { collection?: string }): Promise<{ documents: DocumentRecord[]; total: number }> {
    const documents = await this.store.list(a.collection);
    return { documents, total: documents.length };
  }

  async delete(a: { document_id?: string; collection?: string }): Promise<Record<string, unknown>> {
    if (!a.document_id && !a.collection)
      throw coded('KEEL_E_INVALID_ARGUMENT', 'give document_id (one document) or collection (a whole collection) to delete');
    if (a.document_id && a.collection) throw coded('KEEL_E_INVALID_ARGUMENT', 'give either document_id or collection, not both');
    if (a.document_id) {
      const r = await this.store.deleteDocument(a.document_id);
      if (!r.documents) throw coded('KEEL_E_NOT_FOUND', `no document has the id "${a.document_id}" (see rag_list)`);
      return { deleted_documents: r.documents, deleted_chunks: r.chunks, document_id: a.document_id };
    }
    const r = await this.store.deleteCollection(a.collection!);
    return { deleted_documents: r.documents, deleted_chunks: r.chunks, collection: a.collection };
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.background?.catch(() => undefined);
    await this.store.close();
  }
}

export default definePlugin({
  manifest,
  setup(ctx) {
    const store = new SqliteKnowledgeStore(join(ctx.home, 'knowledge', 'knowledge.db'));
    const k = new Knowledge(store, ctx);
    // Load the vector index in the background, so the first search after a start does not pay for it.
    const warm = setTimeout(
      () => void store.warm?.().catch((e: unknown) => ctx.log.warn(`rag: loading the vector index failed: ${message(e)}`)),
      0,
    );
    warm.unref();
    ctx.provide('knowledge', {
      ingest: async ({ metadata, ...doc }, opts = {}) => {
        const r = await k.ingest(doc, metadata ?? {}, opts.signal);
        return {
          documentId: String(r.document_id),
          chunks: Number(r.chunks),
          replaced: r.replaced === true,
          embedded: r.embedded === true,
        };
      },
    });
    ctx.skills.register('rag_ingest', (a, c) => k.ingest(a, {}, c.signal));
    ctx.skills.register('rag_ingest_file', (a) => k.ingestFile(a));
    ctx.skills.register('rag_ingest_url', (a, c) => k.ingestUrl(a, c.signal));
    ctx.skills.register('rag_search', (a, c) => k.search(a, c.signal));
    ctx.skills.register('rag_list', (a) => k.list(a));
    ctx.skills.register('rag_delete', (a) => k.delete(a));
    return {
      stop: () => {
        clearTimeout(warm);
        return k.stop();
      },
      health: async () => {
        const s = await store.stats();
        return { ok: true, message: `${s.documents} documents, ${s.chunks} chunks` };
      },
    };
  },
  commands: { ingest: ingestCommand },
});
