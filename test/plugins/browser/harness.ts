/**
 * Shared set-up of the browser plugin tests: fixture pages on 127.0.0.1, a loopback 2captcha-compatible solver,
 * a kernel with the browser, web and agent plugins and the fake model provider, and a Chromium with its CDP
 * server for engineC (test/chromium-server.ts: `--remote-debugging-port=0`, the port read from its stderr). Tests set
 * webAllowPrivateNetwork (the fixtures are on loopback) and run Chromium with their own TMPDIR.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { discoverBuiltins } from '../../../kernel/plugins/discover.js';
import type { Actor } from '../../../sdk/index.js';
import { installFakeProvider, type FakeProviderControl } from '../../../testing/index.js';
import { CHROMIUM, type CdpChromium, startCdpChromium as startChromiumCdp } from '../../chromium-server.js';
import { rm, tmp } from '../../helpers.js';
import { agentCandidate } from '../agent/harness.js';

export { CHROMIUM };
export const haveChromium = existsSync(CHROMIUM);
const ROOT = join(import.meta.dirname, '..', '..', '..');
export const operator: Actor = { kind: 'operator', channel: 'cli' };
export const stranger: Actor = { kind: 'user', channel: 'chatA', userId: '999' };
export const DOWNLOAD_BYTES = Buffer.from('keel download fixture\n'.repeat(100));

/** About 70,000 tokens of page: 1,500 paragraphs and 1,200 links. */
function bigPage(): string {
  const words =
    'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango'.split(
      ' ',
    );
  const para = (i: number) => Array.from({ length: 30 }, (_, j) => words[(i * 7 + j * 3) % words.length]).join(' ');
  const parts: string[] = ['<!doctype html><title>Big</title><h1>Big page</h1><button id="top">Top button</button>'];
  for (let i = 0; i < 1500; i++) parts.push(`<p>Paragraph ${i}: ${para(i)}.</p>${i < 1200 ? `<a href="/item/${i}">Item ${i}</a>` : ''}`);
  parts.push('<button id="bottom">Bottom button</button>');
  return parts.join('\n');
}

export const PAGES: Record<string, string | ((q: URLSearchParams, cookie: string) => string)> = {
  '/': `<!doctype html><title>Home</title><h1>Welcome home</h1><p>The fixture site.</p><a href="/form">Form</a>`,
  '/form': `<!doctype html><title>Form</title>
    <h1>Contact</h1>
    <form action="/done" method="get">
      <label for="email">Email</label><input id="email" name="email">
      <input type="password" name="pw" placeholder="Secret" value="hunter2">
      <select name="country" aria-label="Country"><option value="fr">France</option><option value="de">Germany</option></select>
      <input type="checkbox" name="news" aria-label="News">
      <button type="submit">Send</button>
    </form>
    <div id="hov" onmouseover="window.hovered = true">Hover target</div>`,
  '/done': (q) => `<!doctype html><title>Done</title><p id="msg">Thanks ${q.toString().replace(/</g, '')}</p>`,
  '/spa': `<!doctype html><title>SPA</title><div id="app"></div><script>
    window.saved = 0; window.refreshed = 0;
    const render = (items) => {
      const app = document.getElementById('app');
      app.replaceChildren();
      for (const label of items) {
        const b = document.createElement('button');
        b.textContent = label;
        b.onclick = label === 'Save' ? () => { window.saved++; } : label === 'Refresh' ? () => { window.refreshed++; render(['Intro', 'Refresh', 'Save']); } : () => {};
        const row = document.createElement('div');
        row.append(b);
        app.append(row);
      }
    };
    window.render = render;
    render(['Refresh', 'Save']);
  </script>`,
  '/frames': `<!doctype html><title>Frames</title><h1>Frames and shadow</h1>
    <iframe src="/inner" width="400" height="120"></iframe>
    <div id="host"></div>
    <script>
      const root = document.getElementById('host').attachShadow({ mode: 'open' });
      root.innerHTML = '<button id="sb" onclick="window.top.shadowClicked = true">Shadow button</button>';
    </script>`,
  '/inner': `<!doctype html><title>Inner</title><p>Inside the frame</p><button onclick="window.top.frameClicked = true">Frame button</button>`,
  '/xframes': `<!doctype html><title>Cross-origin frame</title><button>Top button</button><iframe id="x" width="400" height="120"></iframe>
    <script>document.getElementById('x').src = 'http://localhost:' + location.port + '/xinner';</script>`,
  '/xinner': `<!doctype html><title>Other origin</title><p>From another origin</p><button onclick="this.textContent = 'Pressed'">Remote button</button>`,
  '/popup': `<!doctype html><title>Opener</title><a href="/popup-target" target="_blank">Open tab</a>`,
  '/popup-target': `<!doctype html><title>New tab</title><h1>The new tab</h1>`,
  '/download': `<!doctype html><title>Downloads</title><a href="/file.bin" download>Get file</a>`,
  '/dialog': `<!doctype html><title>Dialog</title><button onclick="window.answer = confirm('Really delete?')">Delete</button>`,
  '/file': `<!doctype html><title>Upload</title><label for="f">Attachment</label><input type="file" id="f" multiple>`,
  '/slow': `<!doctype html><title>Slow</title><p>Loading</p><script>setTimeout(() => { const b = document.createElement('button'); b.id = 'late'; b.textContent = 'Late'; document.body.append(b); }, 400);</script>`,
  '/blank': `<!doctype html><title></title><body></body>`,
  '/login': `<!doctype html><title>Sign in</title><form><input name="user" placeholder="User"><input type="password" name="pw" placeholder="Password"><button>Log in</button></form>`,
  '/captcha': `<!doctype html><title>Check</title><p>Please verify you are human.</p><form><div class="g-recaptcha" data-sitekey="6Lc-test-sitekey" data-callback="onSolved"></div></form>
    <script>window.solved = null; function onSolved(t) { window.solved = t; }</script>`,
  '/big': bigPage(),
  '/vp': `<!doctype html><meta name="viewport" content="width=device-width, initial-scale=1"><title>Viewport</title><p>viewport</p>`,
  '/tall': `<!doctype html><title>Tall</title><div style="height: 3000px">tall</div>`,
  '/set-cookie': `<!doctype html><title>Cookie set</title><p>set</p>`,
  '/echo-cookie': (_q, cookie) => `<!doctype html><title>Cookie</title><p id="c">cookie=${cookie.replace(/</g, '')}</p>`,
  '/console': `<!doctype html><title>Console</title><p>console</p><script>console.error('boom from the page'); fetch('/api/ping').catch(() => {});</script>`,
};

export interface Fixture {
  base: string;
  captchaUrl: string;
  captchaCalls: string[];
  close(): Promise<void>;
}

export async function startFixtures(): Promise<Fixture> {
  const server: Server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    if (u.pathname === '/file.bin') {
      res.writeHead(200, {
        'content-type': 'application/octet-stream',
        'content-disposition': 'attachment; filename="report.bin"',
        'content-length': DOWNLOAD_BYTES.length,
      });
      return void res.end(DOWNLOAD_BYTES);
    }
    if (u.pathname === '/api/ping') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"pong":true}');
    if (u.pathname === '/missing')
      return void res.writeHead(404, { 'content-type': 'text/html' }).end('<!doctype html><title>Not found</title><h1>404 Not Found</h1>');
    const page = PAGES[u.pathname];
    const headers: Record<string, string> = { 'content-type': 'text/html; charset=utf-8' };
    if (u.pathname === '/set-cookie') headers['set-cookie'] = 'keel=kept; Max-Age=86400; Path=/';
    res.writeHead(page ? 200 : 404, headers);
    res.end(typeof page === 'function' ? page(u.searchParams, req.headers.cookie ?? '') : (page ?? '<title>404</title><p>not found</p>'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const captchaCalls: string[] = [];
  const captcha = createServer((req, res) => {
    captchaCalls.push(req.url ?? '');
    res.setHeader('content-type', 'application/json');
    if (req.url?.startsWith('/in.php')) {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        const f = new URLSearchParams(body);
        const good = f.get('key') === 'captcha-key-123' && f.get('googlekey') === '6Lc-test-sitekey';
        res.end(JSON.stringify(good ? { status: 1, request: 'job-1' } : { status: 0, request: 'ERROR_WRONG_USER_KEY' }));
      });
      return;
    }
    res.end(JSON.stringify({ status: 1, request: 'TOKEN-XYZ' }));
  });
  await new Promise<void>((r) => captcha.listen(0, '127.0.0.1', () => r()));
  return {
    base: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    captchaUrl: `http://127.0.0.1:${(captcha.address() as { port: number }).port}`,
    captchaCalls,
    async close() {
      for (const s of [server, captcha]) {
        s.closeAllConnections();
        await new Promise<void>((r) => s.close(() => r()));
      }
    },
  };
}

export interface Booted {
  kernel: Kernel;
  home: string;
  fake: FakeProviderControl;
  run(name: string, args?: Record<string, unknown>, actor?: Actor): ReturnType<Kernel['execute']>;
  /** Runs a skill that must succeed; its text. */
  ok(name: string, args?: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

/** A kernel with the browser, web and agent plugins; Chromium gets its own TMPDIR under the home. */
export async function bootBrowser(config: Record<string, unknown>): Promise<Booted> {
  const home = tmp('keel-browser-');
  const builtins = tmp('keel-browser-builtins-');
  const tmpdir = join(home, 'tmp');
  mkdirSync(tmpdir);
  const savedTmp = process.env.TMPDIR;
  const savedDisplay = process.env.DISPLAY;
  process.env.TMPDIR = tmpdir;
  delete process.env.DISPLAY;
  const fake = installFakeProvider(home);
  writeFileSync(
    join(home, 'keel.config.yaml'),
    `${JSON.stringify({ llmProvider: 'fake', modelName: 'fake-model', webAllowPrivateNetwork: true, browserTimeoutMs: 5000, adminUsers: { chatA: ['1'] }, ...config }, null, 2)}\n`,
  );
  const all = await discoverBuiltins(join(ROOT, 'plugins'));
  const pick = (id: string) => all.find((c) => c.id === id)!;
  const kernel = await startKernel({
    home,
    builtinDir: builtins,
    extraPlugins: [await agentCandidate(), pick('browser'), pick('web')],
    env: {},
    watchSkills: false,
    logs: new LogSink({ quiet: true }),
  });
  const run = (name: string, args: Record<string, unknown> = {}, actor: Actor = operator) => kernel.execute(name, args, actor);
  return {
    kernel,
    home,
    fake,
    run,
    async ok(name, args = {}) {
      const r = await run(name, args);
      if (!r.success) throw new Error(`${name} failed: ${r.result}`);
      return r.result;
    },
    async close() {
      await kernel.stop();
      if (savedTmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = savedTmp;
      if (savedDisplay !== undefined) process.env.DISPLAY = savedDisplay;
      rm(home);
      rm(builtins);
    },
  };
}

/** A Chromium with its CDP server on a free port (read from stderr), for engineC: test/chromium-server.ts. */
export async function startCdpChromium(): Promise<CdpChromium> {
  return startChromiumCdp(['--hide-scrollbars']);
}

/** Width and height from a PNG's IHDR chunk (throws when it is not a PNG). */
export function pngSize(buf: Buffer): { width: number; height: number } {
  if (buf.subarray(0, 8).toString('hex') !== '89504e470d0a1a0a' || buf.subarray(12, 16).toString('ascii') !== 'IHDR')
    throw new Error('not a PNG');
  return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}
