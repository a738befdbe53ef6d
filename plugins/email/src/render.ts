/**
 * Bodies of outgoing mail. A reply is the agent's Markdown, rendered by the channel kit's `renderEmail` (HTML with
 * raw HTML escaped, only http/https/mailto links, and the matching plain text part). send_email's message is plain
 * text or HTML; HTML gets a text alternative from html-to-text.
 */
import { renderEmail } from '../../../sdk/channel-kit/index.js';

export interface Body {
  text: string;
  html?: string;
}

const HTML_TAG =
  /<(?:!doctype\s+html|html|body|head|p|div|br|table|tr|td|a\s|b|i|u|strong|em|ul|ol|li|h[1-6]|span|img|blockquote|pre|code|hr)\b[^>]*>/i;

/** Whether a send_email message is HTML rather than plain text. */
export function looksLikeHtml(message: string): boolean {
  return HTML_TAG.test(message);
}

export async function htmlToText(html: string): Promise<string> {
  const { convert } = await import('html-to-text');
  return convert(html, { wordwrap: 78, selectors: [{ selector: 'img', format: 'skip' }] }).trim();
}

/** A send_email body: HTML with a text alternative, or plain text alone. */
export async function bodyOf(message: string): Promise<Body> {
  return looksLikeHtml(message) ? { html: message, text: await htmlToText(message) } : { text: message };
}

/** A reply body from the agent's Markdown. */
export function renderMarkdown(md: string): Body {
  const { html, text } = renderEmail(md);
  return { text, html: `<!doctype html><html><body style="font-family: sans-serif; line-height: 1.4">${html}</body></html>` };
}
