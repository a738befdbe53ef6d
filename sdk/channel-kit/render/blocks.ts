/**
 * The one walk over marked's tokens: each top-level Markdown block becomes a `Block` of units the chunker may
 * cut between (words of a paragraph, items of a list, lines of a code block, rows of a table), never inside one
 * (a link, a formatted span, a row). `open`/`close` wrap every piece of a block that is cut, so a code fence or
 * a table split across messages is closed and opened again.
 */
import { Lexer, type Token, type Tokens } from 'marked';
import { DIALECTS, type Dialect, type Platform } from './dialects.js';

/** An uncuttable piece: `text` in the platform's markup, `plain` the same without markup (for a forced cut). */
export interface Unit {
  text: string;
  plain: string;
}

export interface Block {
  open: string;
  close: string;
  joiner: string;
  /** The units' text joined: what the block is when it is not cut (most blocks, most replies). */
  body: string;
  /** The pieces it may be cut between, made only when it has to be cut. */
  units(): Unit[];
}

/**
 * A block of pieces `texts`. Their plain forms (`plains`, default the texts themselves) are made only if the block
 * has to be cut, as most blocks of most replies are not.
 */
function block(open: string, close: string, joiner: string, texts: string[], plains: () => string[] = () => texts): Block {
  return {
    open,
    close,
    joiner,
    body: texts.join(joiner),
    units: () => {
      const p = plains();
      return texts.map((text, i) => ({ text, plain: p[i] ?? text }));
    },
  };
}

/** A run of inline tokens: rendered whole in one pass, split into words only if it must be cut. */
function inlineBlock(tokens: Token[], d: Dialect): Block {
  return { open: '', close: '', joiner: '', body: inline(tokens, d), units: () => inlineUnits(tokens, d) };
}

/** A first character that may open a block (heading, quote, list, rule, fence, HTML, definition, indented code). */
const BLOCK_START = /^[\s#>*+\-=_`~<[|\d]/;
/** Anything the inline grammar acts on (emphasis, code, links, autolinks, entities, escapes, breaks). */
const INLINE_SYNTAX = /[\\`*_~[\]<>&!|:@\n\r]|www\./i;

/**
 * Markdown → marked tokens (GFM): the only parse of a reply. A reply of one line that opens no block is a
 * paragraph, so only the inline grammar runs on it, and a line with no inline syntax at all is its own text:
 * most chat replies skip most of the parser (the property test in render.test.ts holds both to the full parse).
 */
export function parseMarkdown(markdown: string): Token[] {
  if (markdown === '' || markdown.includes('\n') || markdown.includes('\r') || BLOCK_START.test(markdown))
    return new Lexer({ gfm: true }).lex(markdown);
  const tokens: Token[] = INLINE_SYNTAX.test(markdown)
    ? new Lexer({ gfm: true }).inlineTokens(markdown)
    : [{ type: 'text', raw: markdown, text: markdown, escaped: false }];
  return [{ type: 'paragraph', raw: markdown, text: markdown, tokens }];
}

/** The full parse, always (what the fast paths of `parseMarkdown` must equal). */
export function parseMarkdownFully(markdown: string): Token[] {
  return new Lexer({ gfm: true }).lex(markdown);
}

const strippedOf = new Map<Dialect, Dialect>();

/** `d` without formatting (for the plain text of a unit), made once per dialect. */
function stripped(d: Dialect): Dialect {
  let s = strippedOf.get(d);
  if (!s) strippedOf.set(d, (s = strip(d)));
  return s;
}

function strip(d: Dialect): Dialect {
  const same = (s: string) => s;
  return {
    ...d,
    strong: same,
    em: same,
    del: same,
    heading: same,
    code: (s) => d.text(s),
    link: (s, href) => (s === d.text(href) ? s : `${s} (${d.text(href)})`),
    fence: () => ({ open: '', close: '' }),
    quote: { open: '', close: '', prefix: d.text('> ') },
  };
}

function inline(tokens: Token[] | undefined, d: Dialect): string {
  let out = '';
  for (const t of tokens ?? []) {
    switch (t.type) {
      case 'text':
        out += 'tokens' in t && t.tokens ? inline(t.tokens, d) : d.text((t as Tokens.Text).text);
        break;
      case 'escape':
        out += d.text((t as Tokens.Escape).text);
        break;
      case 'strong':
        out += d.strong(inline((t as Tokens.Strong).tokens, d));
        break;
      case 'em':
        out += d.em(inline((t as Tokens.Em).tokens, d));
        break;
      case 'del':
        out += d.del(inline((t as Tokens.Del).tokens, d));
        break;
      case 'codespan':
        out += d.code((t as Tokens.Codespan).text);
        break;
      case 'br':
        out += '\n';
        break;
      case 'link': {
        const l = t as Tokens.Link;
        out += d.link(inline(l.tokens, d) || d.text(l.href), l.href);
        break;
      }
      case 'image': {
        const im = t as Tokens.Image;
        out += d.link(d.text(im.text || 'image'), im.href);
        break;
      }
      case 'checkbox':
        break;
      default:
        out += d.text((t as { raw?: string }).raw ?? '');
    }
  }
  return out;
}

function unit(tokens: Token[], d: Dialect): Unit {
  return { text: inline(tokens, d), plain: inline(tokens, stripped(d)) };
}

function words(s: string, d: Dialect): Unit[] {
  return (s.match(/\S+\s*|\s+/g) ?? []).map((w) => ({ text: d.text(w), plain: d.text(w) }));
}

function inlineUnits(tokens: Token[], d: Dialect): Unit[] {
  const out: Unit[] = [];
  for (const t of tokens) {
    if (t.type === 'text' && !('tokens' in t && t.tokens)) out.push(...words((t as Tokens.Text).text, d));
    else out.push(unit([t], d));
  }
  return out;
}

function tableLines(t: Tokens.Table): { header: string[]; rows: string[] } {
  const p = DIALECTS.plain;
  const cells = [t.header, ...t.rows].map((r) => r.map((c) => inline(c.tokens, p).replace(/\s+/g, ' ').trim()));
  const widths = t.header.map((_, i) => Math.min(40, Math.max(3, ...cells.map((r) => (r[i] ?? '').length))));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join(' | ')
      .trimEnd();
  const [head, ...rows] = cells;
  return { header: [line(head ?? []), widths.map((w) => '-'.repeat(w)).join('-+-')], rows: rows.map(line) };
}

function listText(l: Tokens.List, d: Dialect, depth: number): string {
  const start = typeof l.start === 'number' ? l.start : 1;
  return l.items.map((it, i) => itemText(it, d, depth, l.ordered ? `${start + i}. ` : '\u2022 ')).join('\n');
}

function itemText(it: Tokens.ListItem, d: Dialect, depth: number, bullet: string): string {
  const indent = '  '.repeat(depth);
  const box = it.task ? (it.checked ? '\u2611 ' : '\u2610 ') : '';
  const parts: string[] = [];
  for (const t of it.tokens) {
    if (t.type === 'checkbox') continue;
    if (t.type === 'list') parts.push(listText(t as Tokens.List, d, depth + 1));
    else if (t.type === 'text') parts.push(inline('tokens' in t && t.tokens ? t.tokens : [t], d));
    else parts.push(blockText(t, d, depth + 1));
  }
  const [first = '', ...rest] = parts.filter((p) => p !== '');
  return [indent + d.text(bullet) + box + first, ...rest].join('\n');
}

/** A whole block as one string (inside lists and quotes, where it is not cut). */
function blockText(t: Token, d: Dialect, depth = 0): string {
  const b = toBlock(t, d, Number.POSITIVE_INFINITY, depth);
  return b ? b.open + b.body + b.close : '';
}

function toBlock(t: Token, d: Dialect, limit: number, depth = 0): Block | undefined {
  switch (t.type) {
    case 'space':
    case 'def':
      return undefined;
    case 'paragraph':
      return inlineBlock((t as Tokens.Paragraph).tokens, d);
    case 'text':
      return inlineBlock('tokens' in t && t.tokens ? t.tokens : [t], d);
    case 'heading': {
      const tokens = (t as Tokens.Heading).tokens;
      return block('', '', '', [d.heading(inline(tokens, d))], () => [inline(tokens, stripped(d))]);
    }
    case 'hr':
      return block('', '', '', [d.hr]);
    case 'code': {
      const c = t as Tokens.Code;
      const f = d.fence((c.lang ?? '').trim().split(/\s/)[0] ?? '');
      return block(f.open, f.close, '\n', c.text.split('\n').map(d.codeLine));
    }
    case 'table': {
      const f = d.fence('');
      const { header, rows } = tableLines(t as Tokens.Table);
      const head = header.map(d.codeLine).join('\n');
      const lines = rows.map(d.codeLine);
      // The header is repeated on every piece of a cut table, unless it would eat the piece.
      if (head.length + f.open.length + f.close.length < limit / 4) return block(`${f.open}${head}\n`, f.close, '\n', lines);
      return block(f.open, f.close, '\n', [head, ...lines]);
    }
    case 'list': {
      const l = t as Tokens.List;
      const start = typeof l.start === 'number' ? l.start : 1;
      const bullet = (i: number) => (l.ordered ? `${start + i}. ` : '\u2022 ');
      return block(
        '',
        '',
        '\n',
        l.items.map((it, i) => itemText(it, d, depth, bullet(i))),
        () => l.items.map((it, i) => itemText(it, stripped(d), depth, bullet(i))),
      );
    }
    case 'blockquote': {
      const q = d.quote;
      const prefix = (s: string) =>
        q.prefix
          ? s
              .split('\n')
              .map((l) => q.prefix + l)
              .join('\n')
          : s;
      const inner = (t as Tokens.Blockquote).tokens.filter((x) => x.type !== 'space');
      return block(
        q.open,
        q.close,
        '\n',
        inner.map((x) => prefix(blockText(x, d, depth))),
        () => inner.map((x) => prefix(blockText(x, stripped(d), depth))),
      );
    }
    case 'html':
      return block('', '', '\n', (t as Tokens.HTML).raw.trimEnd().split('\n').map(d.text));
    default: {
      const raw = ((t as { raw?: string }).raw ?? '').trimEnd();
      return raw
        ? block(
            '',
            '',
            '',
            words(raw, d).map((w) => w.text),
          )
        : undefined;
    }
  }
}

/** The blocks of a reply for one platform. */
export function toBlocks(tokens: Token[], platform: Platform, limit: number): Block[] {
  const d = DIALECTS[platform];
  const out: Block[] = [];
  for (const t of tokens) {
    const b = toBlock(t, d, limit);
    // An empty block would only leave a stray blank line between its neighbours.
    if (b && (b.body !== '' || b.open !== '' || b.close !== '')) out.push(b);
  }
  return out;
}
