/**
 * Boots a real kernel with the knowledge plugin and, on demand, two test plugins installed in $home/plugins:
 * `fake-llm` (capability `llm`: a deterministic hashed bag-of-words embedding of 384 dimensions, with a small
 * synonym table so that vector search finds what keywords miss) and `fake-web` (capability `web`: canned pages).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import type { PluginCandidate } from '../../../kernel/plugins/discover.js';
import { rm, tmp, writePlugin } from '../../helpers.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');

export async function knowledgeCandidate(): Promise<PluginCandidate> {
  return {
    id: 'knowledge',
    origin: 'builtin',
    dir: join(ROOT, 'plugins', 'knowledge'),
    manifest: (await import('../../../plugins/knowledge/manifest.js')).default,
    load: async () => (await import('../../../plugins/knowledge/index.js')).default,
  };
}

/** Embedding model name: the content of $home/embed-model.txt, else `hash-384`. Each call is logged to $home/embed.log. */
const FAKE_LLM = `
    const { readFileSync, existsSync, appendFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const SYN = { automobile: 'car', vehicle: 'car', cars: 'car', feline: 'cat', kitten: 'cat', cats: 'cat' };
    const model = () => { const f = join(ctx.home, 'embed-model.txt'); return existsSync(f) ? readFileSync(f, 'utf8').trim() : 'hash-384'; };
    const hash = (s) => { let h = 2166136261; for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); } return h >>> 0; };
    const vec = (text) => {
      const v = new Array(384).fill(0);
      for (let w of (text.toLowerCase().match(/[a-z0-9]+/g) || [])) { w = SYN[w] || w; const h = hash(w); v[h % 384] += (h & 1024) ? 1 : -1; }
      if (v.every((x) => x === 0)) v[0] = 1;
      return v;
    };
    ctx.provide('llm', {
      current: () => ({ provider: 'fake', model: 'fake' }),
      chat: async () => { throw new Error('no chat here'); },
      canEmbed: () => !existsSync(join(ctx.home, 'embed-off')),
      embed: async ({ texts }) => {
        appendFileSync(join(ctx.home, 'embed.log'), texts.length + '\\n');
        if (existsSync(join(ctx.home, 'embed-fail'))) throw new Error('embedding service down');
        return { vectors: texts.map(vec), provider: 'fake', model: model() };
      },
    });
`;

export const PAGES: Record<string, { status?: number; contentType: string; body: string }> = {
  'http://site.test/article.html': {
    contentType: 'text/html; charset=utf-8',
    body: '<!doctype html><html><head><title>Otters</title></head><body><nav>Home | Login | Cookie banner</nav><article><h1>Sea otters</h1><p>Sea otters hold hands while sleeping so they do not drift apart.</p><p>They use stones as tools to open shellfish.</p></article><footer>Copyright footer</footer></body></html>',
  },
  'http://site.test/notes.md': {
    contentType: 'text/markdown',
    body: '# Notes\n\nThe quarterly review is on Friday.\n\n## Budget\n\nThe budget grows by ten percent.',
  },
  'http://site.test/data.json': { contentType: 'application/json', body: JSON.stringify({ planet: 'Mars', moons: ['Phobos', 'Deimos'] }) },
  'http://site.test/missing': { status: 404, contentType: 'text/html', body: 'not found' },
  'http://site.test/image.png': { contentType: 'image/png', body: '\u0089PNG' },
};

const FAKE_WEB = `
    const pages = ${JSON.stringify(PAGES)};
    ctx.provide('web', {
      fetch: async (url) => {
        const p = pages[url];
        if (!p) throw new Error('getaddrinfo ENOTFOUND ' + url);
        return { url, status: p.status || 200, contentType: p.contentType, body: p.body, truncated: false };
      },
      extract: (html) => {
        const title = (/<title>([^<]*)<\\/title>/.exec(html) || [])[1] || '';
        const article = (/<article>([\\s\\S]*)<\\/article>/.exec(html) || [])[1] || html;
        return { title, text: article.replace(/<\\/(p|h1)>/g, '\\n\\n').replace(/<[^>]+>/g, '').trim() };
      },
    });
`;

export interface Booted {
  kernel: Kernel;
  home: string;
  /** Runs a skill as the operator; returns the parsed JSON result, or throws with the error message. */
  call(name: string, args: Record<string, unknown>): Promise<any>;
  /** Runs a skill and returns the failure message (throws if it succeeded). */
  fail(name: string, args: Record<string, unknown>): Promise<string>;
}

const dirs: string[] = [];
const kernels: Kernel[] = [];

export async function boot(o: { llm?: boolean; web?: boolean; home?: string; env?: Record<string, string> } = {}): Promise<Booted> {
  const home = o.home ?? tmp();
  const builtins = tmp('keel-builtins-');
  dirs.push(home, builtins);
  if (o.llm) writePlugin(join(home, 'plugins'), { id: 'fake-llm', manifest: { provides: ['llm'] }, setup: FAKE_LLM });
  if (o.web) writePlugin(join(home, 'plugins'), { id: 'fake-web', manifest: { provides: ['web'] }, setup: FAKE_WEB });
  const kernel = await startKernel({
    home,
    builtinDir: builtins,
    extraPlugins: [await knowledgeCandidate()],
    env: o.env ?? {},
    watchSkills: false,
    logs: new LogSink({ quiet: true }),
  });
  kernels.push(kernel);
  const status = kernel.host.status('knowledge');
  if (status?.state !== 'loaded') throw new Error(`knowledge plugin not loaded: ${status?.reason}`);
  return {
    kernel,
    home,
    async call(name, args) {
      const r = await kernel.execute(name, args, kernel.operator);
      if (!r.success) throw new Error(r.result);
      return JSON.parse(r.result);
    },
    async fail(name, args) {
      const r = await kernel.execute(name, args, kernel.operator);
      if (r.success) throw new Error(`${name} succeeded: ${r.result}`);
      return r.result;
    },
  };
}

export async function stopAll(): Promise<void> {
  for (const k of kernels.splice(0)) await k.stop();
}

export async function cleanup(): Promise<void> {
  await stopAll();
  for (const d of dirs.splice(0)) rm(d);
}

export function write(home: string, name: string, content: string): string {
  const p = join(home, name);
  writeFileSync(p, content);
  return p;
}
