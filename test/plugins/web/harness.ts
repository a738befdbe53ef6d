/**
 * Web plugin tests: a real kernel running only the web plugin, and a loopback HTTP server with the pages the
 * tests fetch.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { discoverBuiltins } from '../../../kernel/plugins/discover.js';
import type { SkillResult, WebCapability } from '../../../sdk/index.js';
import { rm, tmp } from '../../helpers.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');

export const ARTICLE_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Lighthouse keepers of the North Sea | Coastal Weekly</title>
<meta name="author" content="Ingrid Halvorsen">
<style>body { color: red }</style>
<script>window.tracking = "SCRIPT-NOISE";</script>
</head><body>
<header class="site-header"><a href="/">Coastal Weekly</a>
<nav class="menu"><ul><li><a href="/news">NAV-NEWS</a></li><li><a href="/sport">NAV-SPORT</a></li><li><a href="/weather">NAV-WEATHER</a></li><li><a href="/subscribe">Subscribe now</a></li></ul></nav></header>
<main>
<article>
<h1>Lighthouse keepers of the North Sea</h1>
<p class="byline">By Ingrid Halvorsen</p>
<p>For more than a century, the lighthouse on the skerry was kept by families who lived on the rock all year round. They trimmed the wicks, wound the clockwork that turned the lens and logged every passing ship in a leather-bound book.</p>
<p>The last keeper, Olav Brekke, left the island in 1987 when the light was automated. He still remembers the winter storms that sent spray over the gallery forty metres above the sea, and the silence after the generator stopped for the final time.</p>
<p>Today the station is a museum. Visitors arrive by boat in summer, climb the spiral staircase and read the keepers' logbooks, which record shipwrecks, rescues and the long, patient routine of keeping a light burning through the night.</p>
<p>Historians say the logbooks are among the most complete records of coastal shipping in the region, covering weather, traffic and the daily lives of the families who tended the lamp.</p>
</article>
<aside class="related"><h2>Related</h2><ul><li><a href="/a">ASIDE-RELATED-LINK one</a></li><li><a href="/b">ASIDE-RELATED-LINK two</a></li></ul></aside>
</main>
<footer class="site-footer"><p>FOOTER-BOILERPLATE Copyright 2026 Coastal Weekly. All rights reserved.</p><a href="/privacy">Privacy policy</a></footer>
</body></html>`;

export interface TestServer {
  server: Server;
  port: number;
  base: string;
  /** Requests seen, path and headers. */
  seen: Array<{ path: string; headers: Record<string, string | string[] | undefined> }>;
  close(): Promise<void>;
}

export async function startServer(): Promise<TestServer> {
  const seen: TestServer['seen'] = [];
  let base = '';
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    seen.push({ path: url.pathname, headers: req.headers });
    const p = url.pathname;
    const send = (status: number, type: string, body: string | Buffer, extra: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': type, ...extra });
      res.end(body);
    };
    if (p === '/article') return send(200, 'text/html; charset=utf-8', ARTICLE_HTML);
    if (p === '/plain') return send(200, 'text/plain; charset=utf-8', 'hello from the loopback server');
    if (p === '/json') return send(200, 'application/json', '{"answer":42}');
    if (p === '/missing') return send(404, 'text/plain', 'no such page');
    if (p.startsWith('/chain/')) {
      const n = Number(p.slice('/chain/'.length));
      if (n <= 0) return send(200, 'text/plain', 'end of the chain');
      return send(302, 'text/plain', '', { location: `/chain/${n - 1}` });
    }
    if (p === '/loop') return send(302, 'text/plain', '', { location: '/loop' });
    if (p === '/redirect') return send(301, 'text/plain', '', { location: url.searchParams.get('to') ?? '/' });
    if (p === '/big') return send(200, 'text/plain', 'x'.repeat(100_000));
    if (p === '/big-gzip') return send(200, 'text/plain', gzipSync(Buffer.from('y'.repeat(5_000_000))), { 'content-encoding': 'gzip' });
    if (p === '/gzip')
      return send(200, 'text/plain; charset=utf-8', gzipSync(Buffer.from('compressed hello ünïcode')), { 'content-encoding': 'gzip' });
    if (p === '/slow') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first part');
      return; // never ends
    }
    if (p === '/hang') return; // never answers
    if (p === '/latin1')
      return send(
        200,
        'text/plain; charset=iso-8859-1',
        Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x20, 0xe0, 0x20, 0x4e, 0xee, 0x6d, 0x65, 0x73]),
      );
    if (p === '/sjis') return send(200, 'text/plain; charset=Shift_JIS', Buffer.from([0x93, 0xfa, 0x96, 0x7b]));
    if (p === '/meta-charset') {
      const head = Buffer.from('<html><head><meta charset="windows-1252"><title>Quotes</title></head><body><p>');
      const tail = Buffer.from('</p></body></html>');
      return send(200, 'text/html', Buffer.concat([head, Buffer.from([0x93, 0x68, 0x69, 0x94, 0x20, 0x80]), tail]));
    }
    if (p === '/binary') return send(200, 'image/png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3]));
    if (p === '/nav-only')
      return send(
        200,
        'text/html; charset=utf-8',
        '<html><head><title>Tiny</title></head><body><nav>NAV-LINKS</nav><p>Just one short line.</p><footer>FOOTER-BOILERPLATE</footer></body></html>',
      );
    return send(404, 'text/plain', `unknown path ${p} on ${base}`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
  return {
    server,
    port,
    base,
    seen,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export interface Booted {
  kernel: Kernel;
  run(name: string, args: unknown): Promise<SkillResult>;
  web: WebCapability;
}

const dirs: string[] = [];
const kernels: Kernel[] = [];

/** A kernel with only the web plugin. */
export async function boot(overrides: Record<string, unknown> = {}): Promise<Booted> {
  const home = tmp();
  const builtins = tmp('keel-builtins-');
  dirs.push(home, builtins);
  const candidate = (await discoverBuiltins(join(ROOT, 'plugins'))).find((c) => c.dir === join(ROOT, 'plugins', 'web'));
  if (!candidate) throw new Error('the web plugin was not discovered');
  const kernel = await startKernel({
    home,
    builtinDir: builtins,
    extraPlugins: [candidate],
    env: {},
    watchSkills: false,
    logs: new LogSink({ quiet: true }),
    overrides,
  });
  kernels.push(kernel);
  const status = kernel.host.status('web');
  if (status?.state !== 'loaded') throw new Error(`web plugin not loaded: ${status?.reason}`);
  const web = kernel.registry.use<WebCapability>('web');
  if (!web) throw new Error('no web capability');
  return { kernel, web, run: (name, args) => kernel.execute(name, args, kernel.operator) };
}

export async function cleanup(): Promise<void> {
  for (const k of kernels.splice(0)) await k.stop();
  for (const d of dirs.splice(0)) rm(d);
}
