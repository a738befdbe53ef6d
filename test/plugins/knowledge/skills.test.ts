/**
 * The rag_* skills through a real kernel, keyword mode (no `llm` capability): every format, re-ingest,
 * filters, list, delete, files, URLs, scores.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { boot, cleanup, write } from './harness.js';

afterEach(cleanup);

describe('knowledge skills (keyword mode)', () => {
  it('ingests every format and finds the content; scores are within 0..1', async () => {
    const k = await boot();
    const docs: Array<[string, string, string]> = [
      ['text', 'notes.txt', 'The lighthouse keeper rows to the island every morning.\n\nHe brings bread.'],
      ['markdown', 'guide.md', '# Guide\n\n## Lighthouse\n\nThe lamp is cleaned weekly.'],
      ['csv', 'people.csv', 'name,job\nAda,lighthouse keeper\nBob,baker'],
      ['json', 'cfg.json', JSON.stringify({ lighthouse: { height: 40 }, harbour: 'north' })],
      ['jsonl', 'log.jsonl', '{"event":"lighthouse lit"}\n{"event":"ship passed"}'],
      ['code', 'lamp.ts', 'export function lightLighthouse() {\n  return true;\n}\n\nexport function dim() {\n  return false;\n}'],
    ];
    for (const [format, source, content] of docs) {
      const r = await k.call('rag_ingest', { content, source, format });
      expect(r).toMatchObject({ source, collection: 'default', format, replaced: false, embedded: false });
      expect(r.document_id).toMatch(/^doc_/);
      expect(r.chunks).toBeGreaterThan(0);
    }
    const s = await k.call('rag_search', { query: 'lighthouse' });
    expect(s.mode).toBe('keyword');
    const sources = new Set(s.results.map((h: any) => h.source));
    for (const [, source] of docs) expect(sources.has(source)).toBe(true);
    for (const h of s.results) {
      expect(h.score).toBeGreaterThan(0);
      expect(h.score).toBeLessThanOrEqual(1);
      expect(h).toMatchObject({ collection: 'default', title: expect.any(String), content: expect.any(String) });
    }
    // best first
    const scores = s.results.map((h: any) => h.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    // CSV chunks carry the header; the format is inferred from the source when omitted
    const csv = s.results.find((h: any) => h.source === 'people.csv');
    expect(csv.content.startsWith('name,job\n')).toBe(true);
    const inferred = await k.call('rag_ingest', { content: '# T\n\nbody', source: 'x/readme.md' });
    expect(inferred.format).toBe('markdown');
    // limit
    expect((await k.call('rag_search', { query: 'lighthouse', limit: 2 })).results).toHaveLength(2);
    // no match
    expect((await k.call('rag_search', { query: 'zeppelin' })).results).toEqual([]);
  });

  it('lets only an admin ingest local files (a chat user could otherwise read the config file)', async () => {
    const k = await boot();
    const file = write(k.home, 'notes.md', '# Notes\nsecret plans');
    const r = await k.kernel.execute('rag_ingest_file', { file_path: file }, { kind: 'user', channel: 'chatA', userId: '42' });
    expect(r.success).toBe(false);
    expect(r.code).toBe('KEEL_E_FORBIDDEN');
    expect((await k.kernel.execute('rag_ingest_file', { file_path: file }, k.kernel.operator)).success).toBe(true);
  });

  it('re-ingesting the same source in the same collection replaces it', async () => {
    const k = await boot();
    const a = await k.call('rag_ingest', { content: 'Old text about walruses.', source: 'zoo', title: 'Zoo' });
    const b = await k.call('rag_ingest', { content: 'New text about penguins.\n\nAnd puffins.', source: 'zoo', tags: ['birds'] });
    expect(b.replaced).toBe(true);
    expect(b.document_id).toBe(a.document_id);
    expect((await k.call('rag_search', { query: 'walruses' })).results).toEqual([]);
    expect((await k.call('rag_search', { query: 'penguins' })).results).toHaveLength(1);
    const list = await k.call('rag_list', {});
    expect(list.total).toBe(1);
    expect(list.documents[0]).toMatchObject({ id: a.document_id, source: 'zoo', tags: ['birds'], format: 'text' });
    // same source in another collection is another document
    await k.call('rag_ingest', { content: 'Walruses again.', source: 'zoo', collection: 'other' });
    expect((await k.call('rag_list', {})).total).toBe(2);
  });

  it('search filters by collection and by tags (all given tags)', async () => {
    const k = await boot();
    await k.call('rag_ingest', { content: 'Tomato soup recipe.', source: 'a', collection: 'recipes', tags: ['soup', 'veg'] });
    await k.call('rag_ingest', { content: 'Tomato plant care.', source: 'b', collection: 'garden', tags: ['veg'] });
    await k.call('rag_ingest', { content: 'Tomato bisque, a soup.', source: 'c', collection: 'recipes', tags: ['soup'] });
    const src = async (args: Record<string, unknown>) =>
      (await k.call('rag_search', { query: 'tomato', ...args })).results.map((h: any) => h.source).sort();
    expect(await src({})).toEqual(['a', 'b', 'c']);
    expect(await src({ collection: 'recipes' })).toEqual(['a', 'c']);
    expect(await src({ collection: 'garden' })).toEqual(['b']);
    expect(await src({ tags: ['veg'] })).toEqual(['a', 'b']);
    expect(await src({ tags: ['veg', 'soup'] })).toEqual(['a']);
    expect(await src({ collection: 'garden', tags: ['soup'] })).toEqual([]);
    expect(await src({ collection: 'nope' })).toEqual([]);
  });

  it('lists documents with their fields and deletes by id and by collection', async () => {
    const k = await boot();
    const one = await k.call('rag_ingest', { content: 'First.', source: 's1', collection: 'c1', title: 'One', tags: ['t'] });
    await k.call('rag_ingest', { content: 'Second.', source: 's2', collection: 'c1' });
    await k.call('rag_ingest', { content: 'Third.', source: 's3', collection: 'c2' });
    const l = await k.call('rag_list', { collection: 'c1' });
    expect(l.total).toBe(2);
    expect(l.documents[0]).toMatchObject({
      id: one.document_id,
      source: 's1',
      title: 'One',
      collection: 'c1',
      tags: ['t'],
      format: 'text',
      chunks: 1,
    });
    expect(Date.parse(l.documents[0].createdAt)).not.toBeNaN();
    expect((await k.call('rag_list', {})).total).toBe(3);

    expect(await k.call('rag_delete', { document_id: one.document_id })).toMatchObject({ deleted_documents: 1, deleted_chunks: 1 });
    expect((await k.call('rag_search', { query: 'first' })).results).toEqual([]);
    expect(await k.fail('rag_delete', { document_id: one.document_id })).toMatch(/no document has the id/);
    expect(await k.fail('rag_delete', {})).toMatch(/document_id .* or collection/);

    expect(await k.call('rag_delete', { collection: 'c1' })).toMatchObject({ deleted_documents: 1, deleted_chunks: 1 });
    const rest = await k.call('rag_list', {});
    expect(rest.documents.map((d: any) => d.source)).toEqual(['s3']);
    expect((await k.call('rag_search', { query: 'second' })).results).toEqual([]);
  });

  it('rejects bad input before anything changes', async () => {
    const k = await boot();
    expect(await k.fail('rag_ingest', { content: 'x' })).toMatch(/source/);
    expect(await k.fail('rag_ingest', { content: 'x', source: 's', format: 'pdf' })).toBeTruthy();
    expect(await k.fail('rag_ingest', { content: '{bad', source: 's', format: 'json' })).toMatch(/not valid JSON/);
    expect(await k.fail('rag_ingest', { content: '   \n ', source: 's' })).toMatch(/empty/);
    expect((await k.call('rag_list', {})).total).toBe(0);
  });

  it('ingests files by extension; a missing file, a directory, a binary or an oversized file is a clear error', async () => {
    const k = await boot({ env: { KEEL_KNOWLEDGE_MAX_FILE_BYTES: '2048' } });
    const md = write(k.home, 'handbook.md', '# Handbook\n\n## Holidays\n\nStaff get thirty days of holiday.');
    const r = await k.call('rag_ingest_file', { file_path: md, tags: ['hr'] });
    expect(r).toMatchObject({ source: md, format: 'markdown', title: 'handbook.md', tags: ['hr'] });
    const csv = write(k.home, 'rates.csv', 'country,rate\nFrance,20\nGermany,19');
    expect((await k.call('rag_ingest_file', { file_path: csv, collection: 'tax', title: 'Rates' })).format).toBe('csv');
    const hit = (await k.call('rag_search', { query: 'holiday' })).results[0];
    expect(hit).toMatchObject({ source: md, title: 'handbook.md' });
    expect(hit.content).toContain('# Handbook > ## Holidays');
    const listed = (await k.call('rag_list', { collection: 'tax' })).documents[0];
    expect(listed.metadata).toMatchObject({ path: csv, bytes: expect.any(Number) });

    expect(await k.fail('rag_ingest_file', { file_path: join(k.home, 'nope.txt') })).toMatch(/file not found: .*nope\.txt/);
    mkdirSync(join(k.home, 'adir'));
    expect(await k.fail('rag_ingest_file', { file_path: join(k.home, 'adir') })).toMatch(/is a directory/);
    const big = write(k.home, 'big.txt', 'x'.repeat(5000));
    expect(await k.fail('rag_ingest_file', { file_path: big })).toMatch(/knowledgeMaxFileBytes/);
    const bin = write(k.home, 'b.dat', 'abc\u0000def');
    expect(await k.fail('rag_ingest_file', { file_path: bin })).toMatch(/binary/);
    expect((await k.call('rag_list', {})).total).toBe(2);
  });

  it('rag_ingest_url without a web plugin says what is missing', async () => {
    const k = await boot();
    expect(await k.fail('rag_ingest_url', { url: 'http://site.test/notes.md' })).toMatch(/needs the web plugin/);
  });

  it('rag_ingest_url: HTML reduced to main content, markdown and JSON as is, URL and fetch date kept', async () => {
    const k = await boot({ web: true });
    const r = await k.call('rag_ingest_url', { url: 'http://site.test/article.html', tags: ['animals'] });
    expect(r).toMatchObject({
      source: 'http://site.test/article.html',
      title: 'Otters',
      format: 'text',
      url: 'http://site.test/article.html',
    });
    expect(Date.parse(r.fetchedAt)).not.toBeNaN();
    const hit = (await k.call('rag_search', { query: 'otters sleeping' })).results[0];
    expect(hit.content).toContain('hold hands');
    expect(hit.content).not.toMatch(/Cookie banner|<p>|Copyright/);
    const doc = (await k.call('rag_list', {})).documents[0];
    expect(doc.metadata).toMatchObject({
      url: 'http://site.test/article.html',
      fetchedAt: r.fetchedAt,
      contentType: 'text/html; charset=utf-8',
    });

    const md = await k.call('rag_ingest_url', { url: 'http://site.test/notes.md', collection: 'work' });
    expect(md.format).toBe('markdown');
    expect((await k.call('rag_search', { query: 'budget', collection: 'work' })).results[0].content).toContain('# Notes > ## Budget');
    const js = await k.call('rag_ingest_url', { url: 'http://site.test/data.json' });
    expect(js.format).toBe('json');
    expect((await k.call('rag_search', { query: 'Phobos' })).results[0].content).toContain('"moons": ["Phobos","Deimos"]');

    expect(await k.fail('rag_ingest_url', { url: 'http://site.test/missing' })).toMatch(/HTTP status 404/);
    expect(await k.fail('rag_ingest_url', { url: 'http://site.test/image.png' })).toMatch(/image\/png/);
    expect(await k.fail('rag_ingest_url', { url: 'file:///etc/passwd' })).toMatch(/only http and https/);
    expect(await k.fail('rag_ingest_url', { url: 'not a url' })).toMatch(/not a valid URL/);
    expect((await k.call('rag_list', {})).total).toBe(3);
  });

  it('the store survives a kernel restart', async () => {
    const k = await boot();
    await k.call('rag_ingest', { content: 'Persistent fact about glaciers.', source: 'g' });
    await k.kernel.stop();
    const k2 = await boot({ home: k.home });
    expect((await k2.call('rag_search', { query: 'glaciers' })).results[0].source).toBe('g');
  });
});
