/**
 * Browser (DESIGN.md section 7): snapshot size at most 60% of the tokens of Playwright's `ariaSnapshot()` of the
 * same page with every interactive element present in both; navigate + snapshot p50 per engine beside Playwright's
 * own `page.goto` + `locator('body').ariaSnapshot()`; browser start to first snapshot.
 *
 * The peer's snapshot of a page with frames is the page's ariaSnapshot plus each frame's (it does not enter them).
 * Pages are served from 127.0.0.1 (a form, an article page with navigation, a re-rendering app, frames with a
 * shadow root, a 70,000-token page). Keel runs through a real kernel (browser_navigate), engineC against a
 * Chromium started here with --remote-debugging-port=0. Tokens: gpt-tokenizer (cl100k). Needs /usr/bin/chromium.
 *
 * Standalone: `npx tsx bench/browser.ts`.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { encode } from 'gpt-tokenizer';
import { chromium } from 'playwright-core';
import { startKernel, type Kernel } from '../kernel/kernel.js';
import { LogSink } from '../kernel/log.js';
import { discoverBuiltins } from '../kernel/plugins/discover.js';
import { type BenchRow, median, printRows } from './lib.js';

const CHROMIUM = '/usr/bin/chromium';
const ROUNDS = Number(process.env.KEEL_BENCH_BROWSER_ROUNDS ?? 7);
const ROOT = join(import.meta.dirname, '..');
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

function article(): string {
  const nav = ['Home', 'World', 'Politics', 'Business', 'Technology', 'Science', 'Health', 'Sports', 'Culture', 'Opinion'];
  const paras = Array.from(
    { length: 12 },
    (_, i) =>
      `<p>Paragraph ${i + 1} of the story: the committee met on Tuesday to discuss the budget, the schedule and the next steps for the project, and agreed to publish a report.</p>`,
  );
  const related = Array.from(
    { length: 15 },
    (_, i) => `<li><a href="/story/${i}">Related story number ${i + 1} about the same topic</a></li>`,
  );
  return `<!doctype html><title>News story</title>
    <header><nav><ul>${nav.map((n) => `<li><a href="/${n.toLowerCase()}">${n}</a></li>`).join('')}</ul></nav>
    <form role="search"><input type="search" name="q" aria-label="Search"><button>Search</button></form></header>
    <main><article><h1>Committee agrees on the budget</h1><p class="byline">By A. Writer</p>${paras.join('\n')}</article>
    <aside><h2>Related</h2><ul>${related.join('')}</ul></aside></main>
    <footer><a href="/about">About</a> <a href="/contact">Contact</a> <a href="/privacy">Privacy</a></footer>`;
}

function big(): string {
  const words =
    'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango'.split(
      ' ',
    );
  const parts = ['<!doctype html><title>Big</title><h1>Big page</h1>'];
  for (let i = 0; i < 1500; i++)
    parts.push(
      `<p>Paragraph ${i}: ${Array.from({ length: 30 }, (_, j) => words[(i * 7 + j * 3) % words.length]).join(' ')}.</p>${i < 1200 ? `<a href="/item/${i}">Item ${i}</a>` : ''}`,
    );
  return parts.join('\n');
}

/** Pages, with the labels of their interactive elements (each must be in both snapshots). */
const PAGES: Record<string, { html: string; labels: string[] }> = {
  '/form': {
    html: `<!doctype html><title>Form</title><h1>Contact</h1><form action="/done"><label for="email">Email</label><input id="email" name="email">
      <label for="msg">Message</label><textarea id="msg"></textarea><select aria-label="Country"><option>France</option><option>Germany</option></select>
      <label><input type="checkbox" name="news"> Newsletter</label><button type="submit">Send</button></form>`,
    labels: ['Email', 'Message', 'Country', 'Newsletter', 'Send'],
  },
  '/article': {
    html: article(),
    labels: ['Home', 'World', 'Opinion', 'Search', 'Related story number 15 about the same topic', 'About', 'Privacy'],
  },
  '/app': {
    html: `<!doctype html><title>App</title><div id="app"></div><script>
      const items = Array.from({ length: 20 }, (_, i) => 'Task ' + (i + 1));
      document.getElementById('app').innerHTML = '<h1>Tasks</h1><button>New task</button><ul>' + items.map((t) => '<li><input type="checkbox" aria-label="Done ' + t + '"> ' + t + ' <button aria-label="Delete ' + t + '">x</button></li>').join('') + '</ul>';
    </script>`,
    labels: ['New task', 'Done Task 1', 'Delete Task 20'],
  },
  '/frames': {
    html: `<!doctype html><title>Frames</title><h1>Frames</h1><iframe src="/inner"></iframe><div id="host"></div>
      <script>document.getElementById('host').attachShadow({ mode: 'open' }).innerHTML = '<button>Shadow button</button>';</script>`,
    labels: ['Frame button', 'Shadow button'],
  },
  '/inner': { html: `<!doctype html><title>Inner</title><p>Inside</p><button>Frame button</button>`, labels: [] },
  '/big': { html: big(), labels: [] },
};
const MEASURED = ['/form', '/article', '/app', '/frames', '/big'];

async function serve(): Promise<{ server: Server; base: string }> {
  const server = createServer((req, res) => {
    const p = PAGES[(req.url ?? '/').split('?')[0]!];
    res.writeHead(p ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' }).end(p?.html ?? 'not found');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { server, base: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

async function cdpChromium(dir: string): Promise<{ endpoint: string; kill(): void }> {
  const proc = spawn(
    CHROMIUM,
    ['--headless', '--hide-scrollbars', ...ARGS, '--remote-debugging-port=0', `--user-data-dir=${dir}`, 'about:blank'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const endpoint = await new Promise<string>((resolve, reject) => {
    let err = '';
    proc.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    proc.on('exit', () => reject(new Error(err)));
  });
  return { endpoint, kill: () => proc.kill('SIGKILL') };
}

async function bootKernel(home: string, engine: string, endpoint?: string): Promise<Kernel> {
  writeFileSync(
    join(home, 'keel.config.yaml'),
    `${JSON.stringify({ webAllowPrivateNetwork: true, browserEngine: engine, ...(endpoint ? { browserCdpEndpoint: endpoint } : {}) })}\n`,
  );
  const all = await discoverBuiltins(join(ROOT, 'plugins'));
  const pick = (id: string) => all.find((c) => c.id === id)!;
  const builtins = join(home, 'builtins');
  mkdirSync(builtins, { recursive: true });
  return startKernel({
    home,
    builtinDir: builtins,
    extraPlugins: [pick('browser'), pick('web')],
    env: {},
    watchSkills: false,
    logs: new LogSink({ quiet: true }),
  });
}

async function navigate(k: Kernel, url: string): Promise<string> {
  const r = await k.execute('browser_navigate', { url }, { kind: 'operator', channel: 'cli' });
  if (!r.success) throw new Error(r.result);
  return r.result;
}

export async function benchBrowser(): Promise<BenchRow[]> {
  if (!existsSync(CHROMIUM)) {
    console.log(`(browser bench skipped: ${CHROMIUM} is missing; apt-get install chromium)`);
    return [];
  }
  const tmp = mkdtempSync(join(tmpdir(), 'keel-bench-browser-'));
  const savedTmp = process.env.TMPDIR;
  process.env.TMPDIR = tmp;
  const { server, base } = await serve();
  const rows: BenchRow[] = [];
  try {
    // --- the peer: Playwright's own goto + ariaSnapshot, on a browser of its own
    const pwStart = performance.now();
    const pwBrowser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS, headless: true });
    const pwPage = await pwBrowser.newPage({ viewport: { width: 1366, height: 768 } });
    await pwPage.goto(`${base}/form`);
    await pwPage.locator('body').ariaSnapshot();
    const pwFirst = performance.now() - pwStart;
    const aria: Record<string, string> = {};
    const ariaTimes: Record<string, number> = {};
    for (const path of MEASURED) {
      const times: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const t = performance.now();
        await pwPage.goto(`${base}${path}`, { waitUntil: 'load' });
        // the page's, then each child frame's (ariaSnapshot of a page does not enter iframes)
        const parts = [await pwPage.locator('body').ariaSnapshot()];
        for (const f of pwPage.frames().slice(1))
          parts.push(
            await f
              .locator('body')
              .ariaSnapshot()
              .catch(() => ''),
          );
        aria[path] = parts.join('\n');
        times.push(performance.now() - t);
      }
      ariaTimes[path] = median(times);
    }
    await pwBrowser.close();

    // --- Keel, per engine
    for (const engine of ['engineA', 'engineB', 'engineC'] as const) {
      const home = join(tmp, engine);
      mkdirSync(home);
      const cdp = engine === 'engineC' ? await cdpChromium(join(tmp, 'cdp-profile')) : undefined;
      const k = await bootKernel(home, engine, cdp?.endpoint);
      try {
        const t0 = performance.now();
        await navigate(k, `${base}/form`);
        const first = performance.now() - t0;
        rows.push({
          name: `${engine} browser start to first snapshot`,
          value: first,
          unit: 'ms',
          peer: 'playwright launch + goto + ariaSnapshot',
          peerValue: pwFirst,
          budget: 'reported',
          ok: true,
        });
        for (const path of MEASURED) {
          const times: number[] = [];
          let text = '';
          for (let i = 0; i < ROUNDS; i++) {
            const t = performance.now();
            text = await navigate(k, `${base}${path}`);
            times.push(performance.now() - t);
          }
          rows.push({
            name: `${engine} navigate + snapshot p50 ${path}`,
            value: median(times),
            unit: 'ms',
            peer: 'playwright goto + ariaSnapshot',
            peerValue: ariaTimes[path]!,
            budget: 'reported',
            ok: true,
          });
          if (engine !== 'engineA') continue;
          const labels = PAGES[path]!.labels;
          const missing = labels.filter((l) => !text.includes(l));
          const ariaMissing = labels.filter((l) => !aria[path]!.includes(l));
          if (process.env.KEEL_BENCH_BROWSER_DUMP) console.log(`--- ${path} keel\n${text}\n--- ${path} aria\n${aria[path]}`);
          const keelTokens = encode(text).length;
          const ariaTokens = encode(aria[path]!).length;
          const capped = path === '/big';
          rows.push({
            name: `snapshot tokens ${path}${capped ? ' (Keel capped by browserSnapshotMaxTokens)' : ''}${missing.length ? ` MISSING in Keel: ${missing.join(', ')}` : ''}${ariaMissing.length ? ` (ariaSnapshot lacks ${ariaMissing.join(', ')})` : ''}`,
            value: keelTokens,
            unit: 'tokens',
            peer: 'ariaSnapshot',
            peerValue: ariaTokens,
            budget: '<= 0.6x peer, every interactive element in both',
            ok: missing.length === 0 && keelTokens <= 0.6 * ariaTokens,
          });
        }
      } finally {
        await k.stop();
        cdp?.kill();
      }
    }
  } finally {
    server.closeAllConnections();
    server.close();
    if (savedTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = savedTmp;
    rmSync(tmp, { recursive: true, force: true });
  }
  return rows;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) printRows(await benchBrowser());
