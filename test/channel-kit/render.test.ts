/**
 * The rendering pipeline: Markdown parsed once, rendered per platform, cut to the platform's limit without
 * breaking a fence, a link, a table row or (Telegram) the HTML.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PLATFORM_LIMITS, renderChunks, renderEmail, renderTelegram, type Platform } from '../../sdk/channel-kit/index.js';
import { parseMarkdownFully, toBlocks } from '../../sdk/channel-kit/render/blocks.js';
import { pack } from '../../sdk/channel-kit/render/chunk.js';

const TELEGRAM_TAGS = new Set(['b', 'i', 's', 'u', 'code', 'pre', 'a', 'blockquote']);

/** Problems with a chunk as Telegram HTML: unknown tags, unbalanced tags, bare '<' or '&'. */
function telegramProblems(html: string): string[] {
  const problems: string[] = [];
  const stack: string[] = [];
  const re = /<(\/?)([a-z-]+)([^>]*)>/g;
  let last = 0;
  for (let m = re.exec(html); m; m = re.exec(html)) {
    const between = html.slice(last, m.index);
    if (/[<>]/.test(between)) problems.push(`bare angle bracket in ${JSON.stringify(between.slice(0, 40))}`);
    last = re.lastIndex;
    const [, close, tag] = m as unknown as [string, string, string];
    if (!TELEGRAM_TAGS.has(tag)) problems.push(`tag <${tag}>`);
    if (close) {
      if (stack.pop() !== tag) problems.push(`unbalanced </${tag}>`);
    } else stack.push(tag);
  }
  if (/[<>]/.test(html.slice(last))) problems.push('bare angle bracket at the end');
  if (stack.length) problems.push(`unclosed ${stack.join(',')}`);
  if (/&(?!(amp|lt|gt|quot);)/.test(html)) problems.push('bare &');
  return problems;
}

const word = fc.stringMatching(/^[A-Za-z0-9<>&*_`~|#[\]().!-]{1,12}$/);
const text = fc.array(word, { minLength: 1, maxLength: 40 }).map((w) => w.join(' '));
const inline = fc.oneof(
  text,
  text.map((t) => `**${t}**`),
  text.map((t) => `_${t}_`),
  fc.tuple(text, fc.webUrl()).map(([t, u]) => `[${t.replace(/[[\]]/g, '')}](${u})`),
  word.map((w) => `\`${w.replace(/`/g, '')}\``),
);
const paragraph = fc.array(inline, { minLength: 1, maxLength: 8 }).map((p) => p.join(' '));
const code = fc
  .tuple(fc.constantFrom('', 'js', 'python'), fc.array(fc.stringMatching(/^[ -~]{0,120}$/), { minLength: 1, maxLength: 120 }))
  .map(([lang, lines]) => `\`\`\`${lang}\n${lines.map((l) => l.replace(/`/g, "'")).join('\n')}\n\`\`\``);
const table = fc
  .tuple(
    fc.integer({ min: 1, max: 4 }),
    fc.array(fc.array(fc.stringMatching(/^[a-z0-9 ]{1,15}$/), { minLength: 4, maxLength: 4 }), { minLength: 1, maxLength: 80 }),
  )
  .map(([n, rows]) => {
    const line = (r: string[]) =>
      `| ${r
        .slice(0, n)
        .map((c) => c.trim() || 'x')
        .join(' | ')} |`;
    return [line(['h1', 'h2', 'h3', 'h4']), `|${' --- |'.repeat(n)}`, ...rows.map(line)].join('\n');
  });
const list = fc.array(paragraph, { minLength: 1, maxLength: 20 }).map((items) => items.map((i) => `- ${i}`).join('\n'));
const heading = text.map((t) => `## ${t.replace(/#/g, '')}`);
const quote = paragraph.map((p) => `> ${p}`);
const markdown = fc
  .array(fc.oneof(paragraph, code, table, list, heading, quote), { minLength: 1, maxLength: 25 })
  .map((b) => b.join('\n\n'));

const limits = fc.constantFrom(200, 500, 1000);

describe('render + chunk (property)', () => {
  it('telegram: every chunk within the limit and valid Telegram HTML; the plain fallback too', () => {
    fc.assert(
      fc.property(markdown, limits, (md, limit) => {
        const chunks = renderTelegram(md, { limit });
        expect(chunks.length).toBeGreaterThan(0);
        for (const c of chunks) {
          expect(c.html.length).toBeLessThanOrEqual(limit);
          expect(telegramProblems(c.html)).toEqual([]);
          expect(c.plain.length).toBeLessThanOrEqual(c.html.length);
        }
      }),
      { numRuns: 60 },
    );
  });

  for (const platform of ['discord', 'slack', 'whatsapp'] as Platform[]) {
    it(`${platform}: every chunk within the limit, code fences balanced in each chunk`, () => {
      fc.assert(
        fc.property(markdown, limits, (md, limit) => {
          for (const c of renderChunks(md, platform, { limit })) {
            expect(c.length).toBeLessThanOrEqual(limit);
            expect((c.match(/```/g) ?? []).length % 2).toBe(0);
          }
        }),
        { numRuns: 50 },
      );
    });
  }

  it('the one-line fast paths of parseMarkdown render exactly what the full parse renders', () => {
    const platforms: Platform[] = ['telegram', 'discord', 'slack', 'whatsapp', 'plain'];
    const same = (s: string) => {
      for (const p of platforms) {
        const limit = p === 'plain' ? Number.POSITIVE_INFINITY : 300;
        const full = pack(toBlocks(parseMarkdownFully(s), p, limit), limit, p === 'telegram' || p === 'slack');
        expect(renderChunks(s, p, { limit })).toEqual(full);
      }
    };
    // Every kind of line: plain words, inline syntax, block openers, leading spaces, entities, autolinks.
    const line = fc.stringMatching(/^[ A-Za-z0-9<>&*_`~|#[\]().!:@=+\\'"-]{0,80}$/);
    fc.assert(
      fc.property(fc.oneof(line, paragraph, text, fc.string({ maxLength: 60 })), (s) => same(s)),
      { numRuns: 3000 },
    );
    for (const s of ['www.example.com is up', 'mail me: a@b.co', '1. first', '# title', '    code', 'a  ', 'x &amp; y', 'plain words only'])
      same(s);
  });

  it('the default limits are the platforms’ own', () => {
    expect(PLATFORM_LIMITS).toMatchObject({ telegram: 4096, discord: 2000, slack: 3000 });
    const long = Array.from({ length: 3000 }, (_, i) => `word${i}`).join(' ');
    for (const p of ['telegram', 'discord', 'slack'] as const) {
      const chunks = renderChunks(long, p);
      expect(chunks.length).toBeGreaterThan(1);
      for (const c of chunks) expect(c.length).toBeLessThanOrEqual(PLATFORM_LIMITS[p]);
    }
  });
});

describe('render + chunk (examples)', () => {
  it('a list item or quoted paragraph longer than a message is cut as its plain text; the pieces around it keep their markup', () => {
    const list = renderChunks(`1. _one_\n2. **${'two '.repeat(40).trim()}**\n3. three`, 'telegram', { limit: 60 });
    expect(list[0]).toBe('1. <i>one</i>');
    expect(list.at(-1)).toBe('3. three');
    const cut = list.slice(1, -1);
    expect(cut.length).toBeGreaterThan(1);
    expect(cut.join('')).toBe(`2. ${'two '.repeat(40).trim()}`);
    for (const c of cut) expect(c).not.toMatch(/<|\*/);
    const quote = renderChunks(`> **${'quote '.repeat(20).trim()}** and _more_\n>\n> second`, 'telegram', { limit: 60 });
    for (const c of quote) {
      expect(c.length).toBeLessThanOrEqual(60);
      expect(c).toMatch(/^<blockquote>[^<]*<\/blockquote>$/);
    }
    expect(quote.map((c) => c.slice(12, -13)).join('')).toBe(`${'quote '.repeat(20)}and moresecond`);
  });

  it('a code block cut across chunks is closed and opened again with its language', () => {
    const md = `\`\`\`ts\n${Array.from({ length: 200 }, (_, i) => `const v${i} = a < b && c;`).join('\n')}\n\`\`\``;
    const chunks = renderTelegram(md, { limit: 600 }).map((c) => c.html);
    expect(chunks.length).toBeGreaterThan(3);
    for (const c of chunks) {
      expect(c.startsWith('<pre><code class="language-ts">')).toBe(true);
      expect(c.endsWith('</code></pre>')).toBe(true);
    }
    // Every line arrives whole and once, in order.
    const lines = chunks.flatMap((c) => c.replace(/<[^>]+>/g, '').split('\n'));
    expect(lines).toEqual(Array.from({ length: 200 }, (_, i) => `const v${i} = a &lt; b &amp;&amp; c;`));
    const discord = renderChunks(md, 'discord', { limit: 600 });
    for (const c of discord) expect(c.startsWith('```ts\n') && c.endsWith('\n```')).toBe(true);
  });

  it('a table is cut between rows, with the header repeated, never inside a row', () => {
    const rows = Array.from({ length: 120 }, (_, i) => `| row${i} | value ${i} |`);
    const md = ['| name | value |', '| --- | --- |', ...rows].join('\n');
    const chunks = renderChunks(md, 'discord', { limit: 400 });
    expect(chunks.length).toBeGreaterThan(3);
    const seen: string[] = [];
    for (const c of chunks) {
      const lines = c.split('\n');
      expect(lines[0]).toBe('```');
      expect(lines[1]).toMatch(/^name\s+\| value$/);
      seen.push(...lines.slice(3, -1).map((l) => l.split('|')[0]!.trim()));
    }
    expect(seen).toEqual(rows.map((_, i) => `row${i}`));
  });

  it('links are never cut', () => {
    const md = Array.from({ length: 60 }, (_, i) => `see [the document number ${i}](https://example.com/doc/${i}?a=1&b=2)`).join(' ');
    for (const c of renderTelegram(md, { limit: 300 })) {
      expect((c.html.match(/<a /g) ?? []).length).toBe((c.html.match(/<\/a>/g) ?? []).length);
    }
  });

  it('renders each platform’s own formatting from one parse', () => {
    const md = '**bold** _it_ ~~gone~~ `x<y` [site](https://e.com)';
    expect(renderChunks(md, 'telegram')[0]).toBe('<b>bold</b> <i>it</i> <s>gone</s> <code>x&lt;y</code> <a href="https://e.com">site</a>');
    expect(renderChunks(md, 'discord')[0]).toBe('**bold** *it* ~~gone~~ `x<y` [site](<https://e.com>)');
    expect(renderChunks(md, 'slack')[0]).toBe('*bold* _it_ ~gone~ `x&lt;y` <https://e.com|site>');
    expect(renderChunks(md, 'whatsapp')[0]).toBe('*bold* _it_ ~gone~ `x<y` site (https://e.com)');
    expect(renderTelegram(md)[0]!.plain).toBe('bold it gone x<y site');
  });

  it('email: HTML with raw HTML escaped and unsafe links dropped, plus a text part', () => {
    const { html, text } = renderEmail('# Hi\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1)) and **b**');
    expect(html).toContain('<h1>Hi</h1>');
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;');
    expect(html).not.toContain('javascript:');
    expect(text).toContain('Hi');
    expect(text).not.toContain('**');
  });
});
