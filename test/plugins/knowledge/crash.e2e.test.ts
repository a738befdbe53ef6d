/**
 * A process killed (SIGKILL) in the middle of ingesting leaves a readable, consistent store holding every
 * acknowledged document, which the plugin then opens and searches.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterEach, describe, expect, it } from 'vitest';
import { tmp } from '../../helpers.js';
import { boot, cleanup } from './harness.js';

afterEach(cleanup);

describe('knowledge crash safety', () => {
  it('SIGKILL during ingest leaves the last committed state', async () => {
    const home = tmp();
    const db = join(home, 'knowledge', 'knowledge.db');
    const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'crash-child.ts'), db], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const acknowledged: string[] = [];
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    await new Promise<void>((resolve, reject) => {
      let buf = '';
      child.stdout.on('data', (d: Buffer) => {
        buf += d.toString();
        const lines = buf.split('\n');
        buf = lines.pop()!;
        for (const l of lines) acknowledged.push(l.split(' ')[2]!);
        // Kill shortly after a commit, while the next (400-chunk) transaction is being written.
        if (acknowledged.length >= 6)
          setTimeout(() => {
            child.kill('SIGKILL');
            resolve();
          }, 15);
      });
      child.on('exit', (code) => (acknowledged.length >= 6 ? resolve() : reject(new Error(`child exited ${code}: ${err}`))));
    });
    if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once('exit', r));
    expect(child.signalCode).toBe('SIGKILL');

    const raw = new DatabaseSync(db);
    try {
      expect((raw.prepare('PRAGMA integrity_check').get() as { integrity_check: string }).integrity_check).toBe('ok');
      raw.exec("INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')"); // throws if the FTS index disagrees with the chunks
      const docs = raw.prepare('SELECT rid, source, chunks FROM documents').all() as Array<{ rid: number; source: string; chunks: number }>;
      for (const d of docs) {
        const n = (raw.prepare('SELECT count(*) AS n FROM chunks WHERE doc = ?').get(d.rid) as { n: number }).n;
        expect(n, `chunks of ${d.source}`).toBe(d.chunks);
        expect(d.chunks).toBe(400);
      }
      const sources = new Set(docs.map((d) => d.source));
      for (const s of acknowledged) expect(sources.has(s), `acknowledged ${s}`).toBe(true);
    } finally {
      raw.close();
    }

    const k = await boot({ home });
    const s = await k.call('rag_search', { query: 'crash safety', collection: 'crash', limit: 3 });
    expect(s.results).toHaveLength(3);
    const again = await k.call('rag_ingest', { content: 'after the crash', source: 'fresh', collection: 'crash' });
    expect(again.chunks).toBe(1);
  });
});
