/**
 * Dashboard first load (DESIGN.md section 7: at most 150 KB compressed): the page, script and styles as the
 * gateway sends them to a browser that accepts gzip, beside the UI framework alone (preact, its hooks and htm in a
 * one-line page, built with the dashboard's own esbuild options and gzipped the same way).
 * Standalone: `npx tsx bench/dashboard.ts` (needs dist/: `node scripts/build.mjs`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { startKernel } from '../kernel/kernel.js';
import { LogSink } from '../kernel/log.js';
import { type BenchRow, printRows } from './lib.js';

const ROOT = join(import.meta.dirname, '..');
const BUDGET_KB = 150;

/** Bytes on the wire of the dashboard's first load (what a browser fetches before it shows the overview). */
async function firstLoad(): Promise<{ bytes: number; files: string[] }> {
  const home = mkdtempSync(join(tmpdir(), 'keel-bench-dash-'));
  const kernel = await startKernel({
    home,
    env: {},
    watchSkills: false,
    overrides: { gatewayAutoStart: true, gatewayPort: 0, gatewayHost: '127.0.0.1' },
    logs: new LogSink({ quiet: true }),
  });
  try {
    const port = kernel.registry.use<{ port: number }>('gateway:address')!.port;
    let bytes = 0;
    const files: string[] = [];
    for (const path of ['/', '/assets/app.js', '/assets/app.css']) {
      const r = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { 'accept-encoding': 'gzip' } });
      if (r.status !== 200) throw new Error(`${path} answered ${r.status}`);
      // fetch decodes the body; the length on the wire is the header's.
      const n = Number(r.headers.get('content-length'));
      await r.arrayBuffer();
      bytes += n;
      files.push(`${path} ${(n / 1024).toFixed(1)} KB`);
    }
    return { bytes, files };
  } finally {
    await kernel.stop();
    rmSync(home, { recursive: true, force: true });
  }
}

/** The framework alone: a hello-world page with preact, preact/hooks and htm, built and gzipped as the dashboard is. */
async function frameworkAlone(): Promise<number> {
  const out = await build({
    stdin: {
      contents: [
        "import { h, render } from 'preact';",
        "import { useState } from 'preact/hooks';",
        "import htm from 'htm';",
        'const html = htm.bind(h);',
        'function App() { const [n, set] = useState(0); return html`<button onClick=${() => set(n + 1)}>${n}</button>`; }',
        'render(html`<${App} />`, document.body);',
      ].join('\n'),
      resolveDir: ROOT,
      loader: 'ts',
    },
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022'],
    legalComments: 'none',
    write: false,
    logLevel: 'warning',
  });
  return gzipSync(out.outputFiles[0]!.contents, { level: 9 }).length;
}

export async function benchDashboard(): Promise<BenchRow[]> {
  const load = await firstLoad();
  const peer = await frameworkAlone();
  return [
    {
      name: `dashboard first load, gzipped as sent (${load.files.join(', ')})`,
      value: load.bytes / 1024,
      unit: 'KB',
      peer: 'preact + hooks + htm alone (a one-button page, same build, gzip -9)',
      peerValue: peer / 1024,
      budget: `<= ${BUDGET_KB} KB`,
      ok: load.bytes <= BUDGET_KB * 1024,
    },
  ];
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const rows = await benchDashboard();
  printRows(rows);
  process.exitCode = rows.every((r) => r.ok) ? 0 : 1;
}
