/**
 * How each platform writes the few things an agent's Markdown contains. The walker (blocks.ts) is shared; only
 * these leaf decisions differ per platform.
 */

/** The platforms the kit renders for. `plain` is text without markup (email's text part, fallbacks). */
export type Platform = 'telegram' | 'discord' | 'slack' | 'whatsapp' | 'plain';

/**
 * Characters per message. Telegram: 4096 after entity parsing (we count the HTML, which is never shorter);
 * Discord: 2000; Slack: 3000 per section text (a message may carry 40,000, but one block holds 3000 and longer
 * `text` is truncated in some clients); WhatsApp: 4096 (what the multi-device clients accept without folding).
 */
export const PLATFORM_LIMITS: Record<Platform, number> = {
  telegram: 4096,
  discord: 2000,
  slack: 3000,
  whatsapp: 4096,
  plain: Number.POSITIVE_INFINITY,
};

export interface Dialect {
  platform: Platform;
  /** Raw text made literal for the platform. */
  text(s: string): string;
  strong(inner: string): string;
  em(inner: string): string;
  del(inner: string): string;
  /** Inline code from raw text. */
  code(raw: string): string;
  link(inner: string, href: string): string;
  heading(inner: string): string;
  /** Wrapper of a code block; `line` makes one raw line safe inside it. */
  fence(lang: string): { open: string; close: string };
  codeLine(raw: string): string;
  quote: { open: string; close: string; prefix: string };
  hr: string;
}

const htmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const attrEscape = (s: string) => htmlEscape(s).replace(/"/g, '&quot;');
/** A fence inside fenced content would close it early: break the run of backticks with a zero-width space. */
const unfence = (s: string) => s.replace(/`(?=`)/g, '`\u200b');

const telegram: Dialect = {
  platform: 'telegram',
  text: htmlEscape,
  strong: (s) => `<b>${s}</b>`,
  em: (s) => `<i>${s}</i>`,
  del: (s) => `<s>${s}</s>`,
  code: (s) => `<code>${htmlEscape(s)}</code>`,
  link: (s, href) => `<a href="${attrEscape(href)}">${s}</a>`,
  heading: (s) => `<b>${s}</b>`,
  fence: (lang) => ({
    open: lang ? `<pre><code class="language-${attrEscape(lang)}">` : '<pre>',
    close: lang ? '</code></pre>' : '</pre>',
  }),
  codeLine: htmlEscape,
  quote: { open: '<blockquote>', close: '</blockquote>', prefix: '' },
  hr: '\u2014\u2014\u2014',
};

/** What Discord would read as markup in plain text (one regex made once: `replace` resets its position each call). */
const DISCORD_MARKUP = /[\\*_~`|>[\]]/g;

const discord: Dialect = {
  platform: 'discord',
  text: (s) => s.replace(DISCORD_MARKUP, '\\$&'),
  strong: (s) => `**${s}**`,
  em: (s) => `*${s}*`,
  del: (s) => `~~${s}~~`,
  code: (s) => (s.includes('`') ? `\`\` ${s.replace(/``/g, '`\u200b`')} \`\`` : `\`${s}\``),
  link: (s, href) => `[${s}](<${href}>)`,
  heading: (s) => `**${s}**`,
  fence: (lang) => ({ open: `\`\`\`${lang.replace(/[^\w+-]/g, '')}\n`, close: '\n```' }),
  codeLine: unfence,
  quote: { open: '', close: '', prefix: '> ' },
  hr: '\u2014\u2014\u2014',
};

const slack: Dialect = {
  platform: 'slack',
  text: (s) => htmlEscape(unfence(s)),
  strong: (s) => `*${s}*`,
  em: (s) => `_${s}_`,
  del: (s) => `~${s}~`,
  code: (s) => `\`${htmlEscape(s.replace(/`/g, "'"))}\``,
  link: (s, href) => `<${href.replace(/[|>]/g, encodeURIComponent)}|${s.replace(/[|>]/g, ' ')}>`,
  heading: (s) => `*${s}*`,
  fence: () => ({ open: '```\n', close: '\n```' }),
  codeLine: (s) => htmlEscape(unfence(s)),
  quote: { open: '', close: '', prefix: '> ' },
  hr: '\u2014\u2014\u2014',
};

const whatsapp: Dialect = {
  platform: 'whatsapp',
  text: unfence,
  strong: (s) => `*${s}*`,
  em: (s) => `_${s}_`,
  del: (s) => `~${s}~`,
  code: (s) => `\`${s.replace(/`/g, "'")}\``,
  link: (s, href) => (s === href ? href : `${s} (${href})`),
  heading: (s) => `*${s}*`,
  fence: () => ({ open: '```\n', close: '\n```' }),
  codeLine: unfence,
  quote: { open: '', close: '', prefix: '> ' },
  hr: '\u2014\u2014\u2014',
};

const plain: Dialect = {
  platform: 'plain',
  text: (s) => s,
  strong: (s) => s,
  em: (s) => s,
  del: (s) => s,
  code: (s) => s,
  link: (s, href) => (s === href ? href : `${s} <${href}>`),
  heading: (s) => s,
  fence: () => ({ open: '', close: '' }),
  codeLine: (s) => s,
  quote: { open: '', close: '', prefix: '> ' },
  hr: '\u2014\u2014\u2014',
};

export const DIALECTS: Record<Platform, Dialect> = { telegram, discord, slack, whatsapp, plain };

/** Text of Telegram HTML as Telegram would show it: the plain fallback when entities are rejected. */
export function telegramHtmlToPlain(html: string): string {
  return html
    .replace(/<[^>]*>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');
}
