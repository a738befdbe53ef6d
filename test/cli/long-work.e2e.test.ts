/**
 * The CLI's long work through the compiled dist/cli.js: `keel ingest` (file, folder, URL refusals, bad paths,
 * --json, tags and collection, beside a running `keel run` on the same home) and the progress line of
 * `keel ingest`, `keel stop` and `keel doctor` on a terminal (a pty from util-linux `script`), absent otherwise.
 */
import { execFile, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteKnowledgeStore } from '../../plugins/knowledge/src/sqlite-store.js';
import { installFakeAgent } from '../../testing/index.js';
import { rm, tmp, writePlugin } from '../helpers.js';

const CLI = join(import.meta.dirname, '..', '..', 'dist', 'cli.js');
const HAS_SCRIPT = spawnSync('script', ['--version']).status === 0;

interface Out {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], env: Record<string, string>): Promise<Out> {
  return new Promise((resolve) => {
    execFile(file, args, { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const keel = (home: string, args: string[]) => run(process.execPath, [CLI, ...args], { KEEL_HOME: home });
/** The same command on a pseudo-terminal: stdout and stderr both land in stdout, escape codes and all. */
const keelTty = (home: string, args: string[]) =>
  run('script', ['-qec', [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' '), '/dev/null'], {
    KEEL_HOME: home,
    COLUMNS: '160',
  });

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) {
    await keel(d, ['stop', '--timeout', '3000']);
    rm(d);
  }
});

function dir(prefix: string): string {
  const d = tmp(prefix);
  dirs.push(d);
  return d;
}

function docs(): string {
  const d = dir('keel-docs-');
  mkdirSync(join(d, 'guide', 'deep'), { recursive: true });
  mkdirSync(join(d, 'node_modules', 'x'), { recursive: true });
  writeFileSync(join(d, 'README.md'), '# Keel\n\nKeel is an agent service.\n\n## Queue\n\nTasks wait in a priority queue.\n');
  writeFileSync(join(d, 'guide', 'notes.txt'), 'The zebrafish keyword lives here.\n');
  writeFileSync(join(d, 'guide', 'deep', 'data.csv'), 'name,value\nalpha,1\nbeta,2\n');
  writeFileSync(join(d, 'guide', 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2]));
  writeFileSync(join(d, 'node_modules', 'x', 'index.md'), '# skipped\n');
  writeFileSync(join(d, '.hidden.md'), '# skipped too\n');
  return d;
}

async function documents(home: string) {
  const store = new SqliteKnowledgeStore(join(home, 'knowledge', 'knowledge.db'));
  try {
    return await store.list();
  } finally {
    await store.close();
  }
}

describe('keel ingest', () => {
  it('ingests a folder (text files only, skipping hidden and node_modules) with tags and a collection, and says so in --json', async () => {
    const h = dir('keel-ingest-');
    const src = docs();
    const out = await keel(h, ['ingest', src, '--collection', 'manual', '--tags', 'docs, v2', '--json']);
    expect(out.code, out.stderr).toBe(0);
    const j = JSON.parse(out.stdout) as {
      collection: string;
      tags: string[];
      sources: number;
      ingested: number;
      failed: number;
      chunks: number;
      results: Array<{ source: string; ok: boolean; chunks: number }>;
    };
    expect(j).toMatchObject({ collection: 'manual', tags: ['docs', 'v2'], sources: 3, ingested: 3, failed: 0 });
    expect(j.results.map((r) => r.source.slice(src.length + 1)).sort()).toEqual(['README.md', 'guide/deep/data.csv', 'guide/notes.txt']);
    expect(j.chunks).toBe(j.results.reduce((n, r) => n + r.chunks, 0));
    expect(j.chunks).toBeGreaterThanOrEqual(3);
    const docsStored = await documents(h);
    expect(docsStored.map((d) => d.collection)).toEqual(['manual', 'manual', 'manual']);
    expect(docsStored.every((d) => d.tags.join(',') === 'docs,v2')).toBe(true);
    // Nothing of the short-lived kernel stays behind.
    expect((await keel(h, ['status', '--json'])).code).toBe(3);
  }, 60_000);

  it('refuses a bad path (exit 2), a folder with nothing to ingest and a non-http URL, changing nothing', async () => {
    const h = dir('keel-ingest-');
    const missing = await keel(h, ['ingest', join(h, 'nope')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no such file or folder');
    const empty = dir('keel-empty-');
    expect((await keel(h, ['ingest', empty])).code).toBe(2);
    const ftp = await keel(h, ['ingest', 'ftp://example.com/x.txt', '--json']);
    expect(ftp.code).toBe(2);
    expect(JSON.parse(ftp.stdout)).toMatchObject({ error: 'KEEL_E_INVALID_INPUT' });
    expect(await documents(h)).toEqual([]);
  }, 60_000);

  it('ingests a URL through the web plugin and its SSRF guard (refused on loopback until webAllowPrivateNetwork)', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(
        '<!doctype html><html><head><title>Keel page</title></head><body><article><h1>Keel page</h1><p>The quokka paragraph is long enough to be the main content of this page, as readability wants.</p><p>Another paragraph of content.</p></article></body></html>',
      );
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/page.html`;
      const h = dir('keel-ingest-');
      const refused = await keel(h, ['ingest', url, '--json']);
      expect(refused.code).toBe(1);
      expect((JSON.parse(refused.stdout) as { results: Array<{ error: string }> }).results[0]!.error).toMatch(
        /private|loopback|not allowed|refus/i,
      );
      writeFileSync(join(h, 'keel.config.yaml'), 'webAllowPrivateNetwork: true\n');
      const ok = await keel(h, ['ingest', url, '--tags', 'web', '--json']);
      expect(ok.code, ok.stdout + ok.stderr).toBe(0);
      expect(JSON.parse(ok.stdout)).toMatchObject({ ingested: 1, results: [{ source: url, ok: true }] });
      expect((await documents(h)).map((d) => [d.source, d.title])).toEqual([[url, 'Keel page']]);
    } finally {
      server.close();
    }
  }, 60_000);

  it('reports a source that fails (a binary file) with exit 1 and the reason', async () => {
    const h = dir('keel-ingest-');
    const bin = join(docs(), 'guide', 'logo.png');
    const out = await keel(h, ['ingest', bin]);
    expect(out.code).toBe(1);
    expect(out.stdout).toMatch(/Ingested 0 of 1/);
    expect(out.stdout).toMatch(/failed: .*logo\.png: .*binary/);
  }, 60_000);

  it('works beside a running keel run on the same home', async () => {
    const h = dir('keel-ingest-');
    installFakeAgent(h);
    // A plugin that notes every process it starts in: the ingest kernel must load only what ingesting needs
    // (no second channel poller or scheduler beside the agent).
    writePlugin(join(h, 'plugins'), {
      id: 'bystander',
      setup: `const { appendFileSync } = await import('node:fs'); appendFileSync(ctx.home + '/bystander.log', process.pid + '\\n');`,
    });
    expect((await keel(h, ['run', '--daemon'])).code).toBe(0);
    const out = await keel(h, ['ingest', docs(), '--json']);
    expect(out.code, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout)).toMatchObject({ ingested: 3, failed: 0 });
    const st0 = JSON.parse((await keel(h, ['status', '--json'])).stdout) as { pid: number };
    expect(readFileSync(join(h, 'bystander.log'), 'utf8').trim().split('\n')).toEqual([String(st0.pid)]);
    const st = JSON.parse((await keel(h, ['status', '--json'])).stdout) as { running: boolean };
    expect(st.running).toBe(true);
    expect(await documents(h)).toHaveLength(3);
  }, 60_000);
});

describe.skipIf(!HAS_SCRIPT)('progress on a terminal, quiet otherwise', () => {
  it('keel ingest draws a bar with files, chunks and time left, then the summary', async () => {
    const h = dir('keel-ingest-');
    const tty = await keelTty(h, ['ingest', docs()]);
    expect(tty.code).toBe(0);
    expect(tty.stdout).toMatch(/Ingesting .* \d\/3 files \| \d+ chunks \| .* left/);
    expect(tty.stdout).toContain('Ingested 3 of 3 source(s)');
    const plain = await keel(h, ['ingest', docs()]);
    expect(plain.stdout + plain.stderr).not.toContain('Ingesting');
    expect(plain.stdout + plain.stderr).not.toContain('\u001b[');
  }, 60_000);

  it('keel stop and keel doctor show what they wait for on a terminal, nothing when piped', async () => {
    const h = dir('keel-progress-');
    installFakeAgent(h);
    expect((await keel(h, ['run', '--daemon'])).code).toBe(0);
    const stop = await keelTty(h, ['stop']);
    expect(stop.stdout).toMatch(/Stopping agent/);
    expect(stop.stdout).toMatch(/Stopped agent \(pid \d+\)/);
    expect((await keel(h, ['run', '--daemon'])).code).toBe(0);
    const piped = await keel(h, ['stop']);
    expect(piped.stdout).toMatch(/Stopped agent/);
    expect(piped.stdout + piped.stderr).not.toMatch(/Stopping agent/);

    const doctor = await keelTty(h, ['doctor']);
    expect(doctor.stdout).toMatch(/Checking Keel/);
    const doctorPiped = await keel(h, ['doctor']);
    expect(doctorPiped.stdout + doctorPiped.stderr).not.toMatch(/Checking Keel/);
  }, 60_000);
});
