/**
 * One rendering pipeline: the agent's Markdown is parsed once (marked) and rendered per platform, then cut to the
 * platform's message limit without cutting a code fence, link or table row.
 */
import { Parser, Renderer, type Tokens } from 'marked';
import { toBlocks, parseMarkdown } from './blocks.js';
import { pack } from './chunk.js';
import { PLATFORM_LIMITS, type Platform, telegramHtmlToPlain } from './dialects.js';

export { PLATFORM_LIMITS, telegramHtmlToPlain, type Platform } from './dialects.js';
export { parseMarkdown } from './blocks.js';

/**
 * Markdown → messages for `platform`, each at most `limit` (default PLATFORM_LIMITS[platform]) characters.
 * @example renderChunks('**Done.** See `out.txt`.', 'telegram') // ['<b>Done.</b> See <code>out.txt</code>.']
 */
export function renderChunks(markdown: string, platform: Platform, opts: { limit?: number } = {}): string[] {
  const limit = opts.limit ?? PLATFORM_LIMITS[platform];
  if (!(limit > 16)) throw new Error(`A message limit of ${limit} characters is too small to render into.`);
  return pack(toBlocks(parseMarkdown(markdown), platform, limit), limit, platform === 'telegram' || platform === 'slack');
}

/** A Telegram message: HTML, and the text Telegram shows, sent instead when it rejects the HTML. */
export interface TelegramChunk {
  html: string;
  plain: string;
}

/**
 * Markdown → Telegram messages (HTML with a plain fallback for each).
 * @example const [first] = renderTelegram('*hi*'); // { html: '<i>hi</i>', plain: 'hi' }
 */
export function renderTelegram(markdown: string, opts: { limit?: number } = {}): TelegramChunk[] {
  return renderChunks(markdown, 'telegram', opts).map((html) => ({ html, plain: telegramHtmlToPlain(html) }));
}

const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

class MailRenderer extends Renderer {
  // Raw HTML in the agent's text is shown, never interpreted: a reply must not carry markup nobody wrote on purpose.
  override html(t: Tokens.HTML | Tokens.Tag): string {
    return escapeHtml(t.text);
  }
  override link(t: Tokens.Link): string {
    const href = /^(https?:|mailto:)/i.test(t.href) ? t.href : '#';
    return `<a href="${escapeHtml(href)}">${this.parser.parseInline(t.tokens)}</a>`;
  }
  override image(t: Tokens.Image): string {
    return escapeHtml(t.text || t.href);
  }
}

/**
 * Markdown → an email body: HTML (raw HTML escaped, only http/https/mailto links) and the matching text part.
 * @example const { html, text } = renderEmail('# Report\n\nAll **green**.');
 */
export function renderEmail(markdown: string): { html: string; text: string } {
  const tokens = parseMarkdown(markdown);
  const renderer = new MailRenderer();
  const html = new Parser({ gfm: true, renderer }).parse(tokens);
  const text = pack(toBlocks(tokens, 'plain', Number.POSITIVE_INFINITY), Number.POSITIVE_INFINITY, false).join('\n\n');
  return { html, text };
}
