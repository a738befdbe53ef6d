/**
 * Child process of crash.e2e.test.ts: ingests large documents into the store at argv[2] forever, printing
 * `committed <n>` after each commit, until it is killed.
 */
import { SqliteKnowledgeStore } from '../../../plugins/knowledge/src/sqlite-store.js';

const store = new SqliteKnowledgeStore(process.argv[2]!);
const vec = () => Float32Array.from({ length: 384 }, () => Math.random() - 0.5);
for (let n = 1; ; n++) {
  const chunks = Array.from({ length: 400 }, (_, i) => ({
    content: `document ${n} chunk ${i} about crash safety and write-ahead logs`,
    vector: vec(),
  }));
  // Every other round replaces an earlier document, so a kill can land in a delete-and-insert transaction too.
  const source = n % 2 ? `doc-${n}` : `doc-${n - 1}`;
  await store.upsert({ source, title: source, collection: 'crash', tags: ['t'], format: 'text', metadata: { n } }, chunks, 'rand-384');
  process.stdout.write(`committed ${n} ${source}\n`);
}
