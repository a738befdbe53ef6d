/**
 * The knowledge store (SPEC "Knowledge-store document", "Knowledge store" skills). See docs/knowledge.md.
 */
import { Type, type PluginManifest } from '../../sdk/index.js';

const Collection = Type.String({ minLength: 1, maxLength: 200, description: 'Collection name (default "default")' });
const Tags = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 50, description: 'Tags, used for filtering' });
const Title = Type.String({ minLength: 1, maxLength: 500, description: 'Title shown with results' });

const manifest = {
  id: 'knowledge',
  version: '1.0.0',
  kind: 'skill',
  description:
    'Knowledge store: ingest text, markdown, CSV, JSON, JSONL, code, files and web pages; hybrid keyword + vector search (SQLite FTS5 + in-memory int8 vectors).',
  provides: ['knowledge'],
  permissions: { network: true, filesystem: ['$KEEL_HOME', '*'] },
  config: {
    knowledgeMaxFileBytes: {
      schema: Type.Integer({ minimum: 1024 }),
      default: 10 * 1024 * 1024,
      env: ['KEEL_KNOWLEDGE_MAX_FILE_BYTES'],
      policy: 'SAFE',
      description: 'Largest file rag_ingest_file reads, and largest page rag_ingest_url keeps, in bytes (10 MiB by default).',
    },
  },
  cli: [
    {
      name: 'ingest <source>',
      description:
        'Ingest a file, a folder (its text, markdown, CSV, JSON and code files) or an http(s) URL into the knowledge store, with progress and a summary',
      options: [
        { flags: '-c, --collection <name>', description: 'collection to store into (default "default")' },
        { flags: '-t, --tags <list>', description: 'comma-separated tags, e.g. docs,v2' },
        { flags: '--json', description: 'machine-readable summary (no progress bar)' },
      ],
    },
  ],
  skills: [
    {
      name: 'rag_ingest',
      description:
        'Store a document in the knowledge store, chunked by format (markdown by headings, csv by rows with the header, jsonl by records, json by top-level entries, code by blocks, text by paragraphs). Re-ingesting the same source in the same collection replaces it. Returns {document_id, source, collection, title, format, chunks, replaced, embedded}.',
      category: 'knowledge',
      parameters: Type.Object(
        {
          content: Type.String({ minLength: 1, description: 'Text, markdown, JSON, CSV or code' }),
          source: Type.String({
            minLength: 1,
            maxLength: 2000,
            description: 'Source identifier (a path, URL or name); the same source replaces the earlier version',
          }),
          collection: Type.Optional(Collection),
          title: Type.Optional(Title),
          tags: Type.Optional(Tags),
          format: Type.Optional(
            Type.Union(
              [
                Type.Literal('text'),
                Type.Literal('markdown'),
                Type.Literal('csv'),
                Type.Literal('json'),
                Type.Literal('jsonl'),
                Type.Literal('code'),
              ],
              { description: "Default: from the source's extension, else text" },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    },
    {
      name: 'rag_ingest_file',
      description:
        'Read a local file (format from its extension) and store it in the knowledge store, replacing an earlier version of the same file. Returns what rag_ingest returns plus bytes.',
      category: 'knowledge',
      // Reading any local file the Keel user can read (config files, keys) and making it searchable is not for
      // non-admins: isDangerous makes the kernel require an admin, and refuses it on actions started by untrusted content.
      isDangerous: true,
      parameters: Type.Object(
        {
          file_path: Type.String({ minLength: 1, description: 'Path of the file' }),
          collection: Type.Optional(Collection),
          tags: Type.Optional(Tags),
          title: Type.Optional(Title),
        },
        { additionalProperties: false },
      ),
    },
    {
      name: 'rag_ingest_url',
      description:
        'Fetch a web page (HTML reduced to its main content; text, markdown and JSON as is) and store it, keeping the URL and fetch date as metadata. Returns what rag_ingest returns plus url and fetchedAt.',
      category: 'knowledge',
      parameters: Type.Object(
        {
          url: Type.String({ minLength: 1, maxLength: 4000, description: 'http(s) URL' }),
          collection: Type.Optional(Collection),
          tags: Type.Optional(Tags),
          title: Type.Optional(Title),
        },
        { additionalProperties: false },
      ),
    },
    {
      name: 'rag_search',
      description:
        'Search the knowledge store. Returns {query, mode ("hybrid" or "keyword"), results: [{score 0..1, source, title, collection, tags, document_id, chunk_id, position, content}]}, best first.',
      category: 'knowledge',
      isParallelSafe: true,
      parameters: Type.Object(
        {
          query: Type.String({ minLength: 1, maxLength: 4000, description: 'What to look for' }),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10, description: 'Number of chunks (default 10)' })),
          collection: Type.Optional(Collection),
          tags: Type.Optional(
            Type.Array(Type.String({ minLength: 1 }), { maxItems: 50, description: 'Only documents carrying all of these tags' }),
          ),
        },
        { additionalProperties: false },
      ),
    },
    {
      name: 'rag_list',
      description:
        'List stored documents (all, or one collection): {documents: [{id, source, title, collection, tags, format, chunks, metadata, createdAt, updatedAt}], total}.',
      category: 'knowledge',
      isParallelSafe: true,
      parameters: Type.Object({ collection: Type.Optional(Collection) }, { additionalProperties: false }),
    },
    {
      name: 'rag_delete',
      description:
        'Delete one document (document_id) or a whole collection (collection); one of the two is required. Returns {deleted_documents, deleted_chunks}.',
      category: 'knowledge',
      parameters: Type.Object(
        { document_id: Type.Optional(Type.String({ minLength: 1 })), collection: Type.Optional(Collection) },
        { additionalProperties: false },
      ),
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
