/**
 * `keel ingest <file|folder|url> [--collection] [--tags] [--json]`: ingests into the knowledge store with a
 * progress bar (files, chunks, time left) on a terminal and a summary.
 *
 * It starts a short-lived kernel with only the plugins ingesting needs (knowledge, web for URLs, the agent's
 * `llm` and the model providers for embeddings) and runs `rag_ingest_file` / `rag_ingest_url` through dispatch
 * as the local operator: the same limits, SSRF guard and embeddings as the agent gets, and no second channel
 * poller or scheduler beside a `keel run` on the same home. Both write the one SQLite store (WAL), and a running
 * agent's vector index reloads when another process changed the file.
 *
 * Exit codes: 0 everything ingested; 1 some sources failed; 2 bad input (no such path, nothing ingestible,
 * not an http(s) URL), nothing changed.
 */
import { readdir, stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import type { CommandContext, RunningKernel } from '../../../sdk/index.js';
import { errorMessage } from '../../../sdk/index.js';
import { formatFromName } from './chunk.js';

const OPERATOR = { kind: 'operator', channel: 'cli' } as const;
/** Folders never walked into. */
const SKIP_DIRS = new Set(['node_modules', '.git', '.hg', '.svn', '__pycache__', 'dist', 'build']);
/** Files of a folder ingested at most (a bigger tree is refused: name a narrower folder). */
export const MAX_FILES = 10_000;

interface Item {
  kind: 'file' | 'url';
  source: string;
}

interface ItemResult {
  source: string;
  ok: boolean;
  chunks?: number;
  documentId?: string;
  embedded?: boolean;
  replaced?: boolean;
  warning?: string;
  error?: string;
}

class UsageProblem extends Error {}

async function walk(dir: string, out: string[]): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const e of entries) {
    if (e.name.startsWith('.')) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (!SKIP_DIRS.has(e.name)) await walk(p, out);
    } else if (e.isFile() && formatFromName(e.name)) {
      out.push(p);
      if (out.length > MAX_FILES) throw new UsageProblem(`${dir} holds more than ${MAX_FILES} ingestible files; name a narrower folder`);
    }
  }
}

/** What to ingest, checked before anything starts. */
export async function plan(source: string): Promise<Item[]> {
  const raw = source.trim();
  if (!raw) throw new UsageProblem('give a file, a folder or an http(s) URL to ingest');
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new UsageProblem(`"${raw}" is not a valid URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new UsageProblem(`only http and https URLs can be ingested, not ${url.protocol}`);
    return [{ kind: 'url', source: url.href }];
  }
  const path = resolve(raw === '~' || raw.startsWith('~/') ? join(homedir(), raw.slice(1)) : raw);
  const info = await stat(path).catch(() => undefined);
  if (!info) throw new UsageProblem(`no such file or folder: ${path}`);
  if (info.isFile()) return [{ kind: 'file', source: path }];
  if (!info.isDirectory()) throw new UsageProblem(`${path} is neither a regular file nor a folder`);
  const files: string[] = [];
  await walk(path, files);
  if (!files.length) throw new UsageProblem(`${path} holds no file Keel can ingest (text, markdown, CSV, JSON, JSONL, code)`);
  return files.map((f) => ({ kind: 'file', source: f }));
}

export function parseTags(v: unknown): string[] | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const tags = String(v)
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  return tags.length ? tags : undefined;
}

async function ingestOne(k: RunningKernel, item: Item, collection: string | undefined, tags: string[] | undefined): Promise<ItemResult> {
  const common = { ...(collection ? { collection } : {}), ...(tags ? { tags } : {}) };
  const r =
    item.kind === 'url'
      ? await k.execute('rag_ingest_url', { url: item.source, ...common }, OPERATOR)
      : await k.execute('rag_ingest_file', { file_path: item.source, ...common }, OPERATOR);
  if (!r.success) return { source: item.source, ok: false, error: r.result.replace(/^Skill "[^"]+" failed: /, '') };
  const out = JSON.parse(r.result) as { chunks: number; document_id: string; embedded: boolean; replaced: boolean; warning?: string };
  return {
    source: item.source,
    ok: true,
    chunks: out.chunks,
    documentId: out.document_id,
    embedded: out.embedded,
    replaced: out.replaced,
    ...(out.warning ? { warning: out.warning } : {}),
  };
}

export async function ingestCommand(c: CommandContext): Promise<number> {
  const o = c.options as { collection?: string; tags?: string; json?: boolean };
  const json = o.json === true;
  const fail = (message: string, code: number) => {
    if (json) process.stdout.write(`${JSON.stringify({ error: code === 2 ? 'KEEL_E_INVALID_INPUT' : 'KEEL_E_FAILED', message })}\n`);
    else process.stderr.write(`keel ingest: ${message}\n`);
    return code;
  };
  const collection = o.collection?.trim() || undefined;
  if (o.collection !== undefined && (!collection || collection.length > 200))
    return fail('--collection needs a name of 1 to 200 characters', 2);
  const tags = parseTags(o.tags);
  let items: Item[];
  try {
    items = await plan(String(c.args[0] ?? ''));
  } catch (e) {
    if (e instanceof UsageProblem) return fail(e.message, 2);
    throw e;
  }
  const base = items.length > 1 ? resolve(String(c.args[0])) : undefined;
  const shown = (s: string) => (base ? relative(base, s) : s);

  const started = Date.now();
  const tty = !json && process.stderr.isTTY === true;
  let kernel: RunningKernel;
  try {
    kernel = await c.startKernel({
      processName: 'ingest',
      only: { ids: ['knowledge', 'web', 'agent'], kinds: ['provider'] },
      logLevel: 'warn',
    });
  } catch (e) {
    return fail(errorMessage(e), 1);
  }
  const knowledge = kernel.pluginStatus('knowledge');
  if (knowledge?.state !== 'loaded') {
    await kernel.stop();
    return fail(
      `the knowledge plugin is not running (${knowledge?.state ?? 'not installed'}${knowledge?.reason ? `: ${knowledge.reason}` : ''}); see \`keel plugins\``,
      1,
    );
  }

  const { SingleBar, Presets } = await import('cli-progress');
  const bar = tty
    ? new SingleBar(
        {
          format: 'Ingesting {bar} {value}/{total} files | {chunks} chunks | {duration_formatted} elapsed, {eta_formatted} left | {file}',
          hideCursor: true,
          clearOnComplete: true,
          etaBuffer: 20,
        },
        Presets.shades_classic,
      )
    : undefined;
  let chunks = 0;
  bar?.start(items.length, 0, { chunks: 0, file: shown(items[0]!.source).slice(-40) });
  const results: ItemResult[] = [];
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
  };
  process.once('SIGINT', onSignal);
  try {
    for (const item of items) {
      if (interrupted) break;
      bar?.update({ file: shown(item.source).slice(-40) });
      const r = await ingestOne(kernel, item, collection, tags).catch(
        (e: unknown) => ({ source: item.source, ok: false, error: errorMessage(e) }) as ItemResult,
      );
      results.push(r);
      chunks += r.chunks ?? 0;
      bar?.increment(1, { chunks });
    }
  } finally {
    bar?.stop();
    process.off('SIGINT', onSignal);
    await kernel.stop();
  }

  const failed = results.filter((r) => !r.ok);
  const summary = {
    collection: collection ?? 'default',
    ...(tags ? { tags } : {}),
    sources: items.length,
    ingested: results.length - failed.length,
    failed: failed.length,
    skipped: items.length - results.length,
    chunks,
    embedded: results.filter((r) => r.embedded).length,
    durationMs: Date.now() - started,
    results,
  };
  if (json) process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  else {
    const secs = (summary.durationMs / 1000).toFixed(1);
    const lines = [
      `Ingested ${summary.ingested} of ${items.length} source(s) into collection "${summary.collection}": ${chunks} chunks, ${summary.embedded} with embeddings, in ${secs} s.`,
    ];
    if (summary.embedded < summary.ingested)
      lines.push('Sources without embeddings are found by keyword and re-embedded in the background once an embedding provider answers.');
    for (const f of failed) lines.push(`  failed: ${shown(f.source)}: ${f.error}`);
    if (summary.skipped) lines.push(`  interrupted: ${summary.skipped} source(s) not ingested.`);
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  return failed.length || summary.skipped ? 1 : 0;
}
