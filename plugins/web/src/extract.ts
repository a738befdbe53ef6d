/**
 * Main content of an HTML page: @mozilla/readability on a linkedom document, with the page's body text (minus
 * navigation, header, footer, asides, scripts and styles) as the fallback when Readability finds no article.
 *
 * Both libraries are CommonJS and loaded synchronously on first use (createRequire), so the capability's
 * `extract` can stay synchronous while the plugin's start imports nothing heavy.
 */
import { createRequire } from 'node:module';

/** The few DOM members used here (the project compiles without the DOM lib). */
interface DomNode {
  nodeType: number;
  nodeName: string;
  textContent: string | null;
  childNodes: ArrayLike<DomNode>;
}
interface DomElement extends DomNode {
  getAttribute(name: string): string | null;
  closest(sel: string): DomElement | null;
  remove(): void;
}
interface DomDocument extends DomNode {
  title: string;
  body: DomElement | null;
  documentElement: DomElement | null;
  querySelector(sel: string): DomElement | null;
  querySelectorAll(sel: string): ArrayLike<DomElement>;
}
interface ReadabilityArticle {
  title?: string | null;
  content?: string | null;
  textContent?: string | null;
  byline?: string | null;
  excerpt?: string | null;
}
interface Libs {
  parseHTML(html: string): { document: DomDocument };
  Readability: new (doc: DomDocument, opts?: { charThreshold?: number }) => { parse(): ReadabilityArticle | null };
}

let libs: Libs | undefined;
function load(): Libs {
  if (!libs) {
    const require = createRequire(import.meta.url);
    const { parseHTML } = require('linkedom') as Pick<Libs, 'parseHTML'>;
    const { Readability } = require('@mozilla/readability') as Pick<Libs, 'Readability'>;
    libs = { parseHTML, Readability };
  }
  return libs;
}

const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'SVG', 'CANVAS', 'IFRAME', 'OBJECT', 'HEAD']);
const BLOCK = new Set([
  'P',
  'DIV',
  'SECTION',
  'ARTICLE',
  'MAIN',
  'HEADER',
  'FOOTER',
  'ASIDE',
  'NAV',
  'BLOCKQUOTE',
  'PRE',
  'TABLE',
  'TR',
  'UL',
  'OL',
  'DL',
  'DT',
  'DD',
  'H1',
  'H2',
  'H3',
  'H4',
  'H5',
  'H6',
  'FIGURE',
  'FIGCAPTION',
  'FORM',
  'HR',
  'ADDRESS',
  'DETAILS',
  'SUMMARY',
]);

/** Readable text of a node: blocks on their own lines, list items bulleted, whitespace collapsed. */
export function nodeText(root: DomNode): string {
  const out: string[] = [];
  const walk = (n: DomNode) => {
    if (n.nodeType === 3) {
      out.push(n.textContent ?? '');
      return;
    }
    if (n.nodeType !== 1 && n.nodeType !== 9 && n.nodeType !== 11) return;
    const tag = n.nodeName.toUpperCase();
    if (SKIP.has(tag)) return;
    if (tag === 'BR') return void out.push('\n');
    if (tag === 'LI') out.push('\n- ');
    else if (tag === 'TD' || tag === 'TH') out.push(' ');
    else if (BLOCK.has(tag)) out.push('\n\n');
    for (let i = 0; i < n.childNodes.length; i++) walk(n.childNodes[i]!);
    if (BLOCK.has(tag)) out.push('\n\n');
  };
  walk(root);
  return tidy(out.join(''));
}

export function tidy(text: string): string {
  return text
    .replace(/\u00a0/g, ' ')
    .replace(/[ \t\f\v\r]+/g, ' ')
    .replace(/ *\n */g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

function meta(doc: DomDocument, selector: string): string | undefined {
  const v = doc.querySelector(selector)?.getAttribute('content')?.trim();
  return v || undefined;
}

/** Site furniture that is never the main content. A header inside an article or main element is kept (it often holds the headline). */
const FURNITURE = [
  'nav',
  'aside',
  'footer',
  'form',
  'dialog',
  '[role="navigation"]',
  '[role="banner"]',
  '[role="contentinfo"]',
  '[role="complementary"]',
  '[aria-hidden="true"]',
  '[hidden]',
];

function dropFurniture(doc: DomDocument): DomDocument {
  for (const sel of [...FURNITURE, 'header']) {
    const found = doc.querySelectorAll(sel);
    for (let i = found.length - 1; i >= 0; i--) {
      const el = found[i]!;
      if (sel === 'header' && el.closest('article, main')) continue;
      el.remove();
    }
  }
  return doc;
}

/** A document linkedom can work with: a fragment or empty string gets the html/body around it. */
function parse(html: string): DomDocument {
  const { parseHTML } = load();
  const doc = parseHTML(/<html[\s>]/i.test(html) ? html : `<!doctype html><html><head></head><body>${html}</body></html>`).document;
  return doc.documentElement ? doc : parseHTML('<!doctype html><html><head></head><body></body></html>').document;
}

/** Title, main text, byline and excerpt of an HTML page. Never throws on odd HTML. */
export function extractArticle(html: string, url: string): { title: string; text: string; byline?: string; excerpt?: string } {
  const { Readability } = load();
  const page = parse(html);
  const h1 = page.querySelector('h1')?.textContent;
  const fallbackTitle = (page.title || meta(page, 'meta[property="og:title"]') || h1 || '').trim();
  const byMeta = meta(page, 'meta[name="author"]');
  const descMeta = meta(page, 'meta[name="description"]') ?? meta(page, 'meta[property="og:description"]');

  let article: ReadabilityArticle | null = null;
  try {
    // Readability changes the document it reads: give it its own copy, without the site's furniture.
    article = new Readability(dropFurniture(parse(html))).parse();
  } catch {
    article = null;
  }
  let text = '';
  if (article?.content) text = nodeText(parse(article.content).body ?? page);
  if (!text && article?.textContent) text = tidy(article.textContent);
  if (!text) {
    dropFurniture(page);
    const main = page.querySelector('main') ?? page.querySelector('article') ?? page.body ?? page.documentElement;
    text = main ? nodeText(main) : '';
  }
  const title = (article?.title?.trim() || fallbackTitle || url).replace(/\s+/g, ' ');
  const byline = article?.byline?.trim() || byMeta;
  const excerpt = article?.excerpt?.trim() || descMeta;
  return { title, text, ...(byline ? { byline } : {}), ...(excerpt ? { excerpt: tidy(excerpt) } : {}) };
}

/** HTML as `http_fetch` returns it: markup kept (links stay visible), scripts, styles, SVG and comments dropped. */
export function stripHtmlNoise(html: string): string {
  return html
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/<(script|style|noscript|template|svg)\b[\s\S]*?<\/\1\s*>/gi, '')
    .replace(/<(script|style|noscript|template|svg)\b[^>]*\/?>/gi, '')
    .replace(/[ \t\r\f\v]+/g, ' ')
    .replace(/\s*\n\s*/g, '\n');
}
