/**
 * extract_article and the capability's extract: the title and main text of a page, without navigation,
 * header, aside and footer boilerplate.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ARTICLE_HTML, boot, cleanup, startServer, type TestServer } from './harness.js';

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer();
});
afterAll(async () => {
  await srv.close();
});
afterEach(cleanup);

const BOILERPLATE = ['NAV-NEWS', 'NAV-SPORT', 'FOOTER-BOILERPLATE', 'ASIDE-RELATED-LINK', 'SCRIPT-NOISE', 'color: red', 'Privacy policy'];

describe('extract_article', () => {
  it('returns title, byline and main text of an article page, marked untrusted', async () => {
    const { run } = await boot({ webAllowPrivateNetwork: true });
    const r = await run('extract_article', { url: `${srv.base}/article` });
    expect(r.success, r.result).toBe(true);
    expect(r.result).toContain(`[untrusted web content from ${srv.base}/article]`);
    const a = JSON.parse(r.result) as { notice: string; url: string; title: string; byline: string | null; text: string };
    expect(a.notice.startsWith(`[untrusted web content from ${srv.base}/article]`)).toBe(true);
    expect(a.url).toBe(`${srv.base}/article`);
    expect(a.title).toMatch(/^Lighthouse keepers of the North Sea/);
    expect(a.byline).toMatch(/Ingrid Halvorsen/);
    expect(a.text).toContain('The last keeper, Olav Brekke, left the island in 1987');
    expect(a.text).toContain('Today the station is a museum.');
    for (const b of BOILERPLATE) expect(a.text, b).not.toContain(b);
    // Paragraphs stay apart.
    expect(a.text).toMatch(/leather-bound book\.\n\nThe last keeper/);
  });

  it('falls back to the body text without navigation and footer when there is no article', async () => {
    const { run } = await boot({ webAllowPrivateNetwork: true });
    const r = await run('extract_article', { url: `${srv.base}/nav-only` });
    expect(r.success, r.result).toBe(true);
    const a = JSON.parse(r.result) as { title: string; text: string };
    expect(a.title).toBe('Tiny');
    expect(a.text).toContain('Just one short line.');
    expect(a.text).not.toContain('NAV-LINKS');
    expect(a.text).not.toContain('FOOTER-BOILERPLATE');
  });

  it('fails clearly on an HTTP error page', async () => {
    const { run } = await boot({ webAllowPrivateNetwork: true });
    const r = await run('extract_article', { url: `${srv.base}/missing` });
    expect(r.success).toBe(false);
    expect(r.result).toMatch(/answered HTTP 404/);
  });
});

describe('web capability extract', () => {
  it('extracts from HTML it is given', async () => {
    const { web } = await boot();
    const a = web.extract(ARTICLE_HTML, 'https://news.example/lighthouse');
    expect(a.title).toMatch(/^Lighthouse keepers of the North Sea/);
    expect(a.byline).toMatch(/Ingrid Halvorsen/);
    expect(a.text).toContain('Olav Brekke');
    expect(a.excerpt).toBeTruthy();
    for (const b of BOILERPLATE) expect(a.text, b).not.toContain(b);
  });

  it('copes with empty and broken HTML', async () => {
    const { web } = await boot();
    expect(web.extract('', 'https://x.example/').text).toBe('');
    const broken = web.extract('<div><p>unclosed <b>bold <i>text', 'https://x.example/');
    expect(broken.text).toContain('unclosed bold text');
    expect(broken.title).toBe('https://x.example/');
  });
});
