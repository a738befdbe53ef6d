/**
 * http_fetch and the `web` capability against a loopback server (webAllowPrivateNetwork enabled for it):
 * redirects, size cap, timeouts, charsets, content handling, the untrusted marker.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { boot, cleanup, startServer, type TestServer } from './harness.js';

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer();
});
afterAll(async () => {
  await srv.close();
});
afterEach(cleanup);

const allow = { webAllowPrivateNetwork: true };

describe('http_fetch', () => {
  it('returns status, content type and body, marked as untrusted web content', async () => {
    const { run } = await boot(allow);
    const r = await run('http_fetch', { url: `${srv.base}/plain` });
    expect(r.success, r.result).toBe(true);
    expect(r.result.startsWith(`[untrusted web content from ${srv.base}/plain]`)).toBe(true);
    expect(r.result).toContain('Status: 200');
    expect(r.result).toContain('Content-Type: text/plain; charset=utf-8');
    expect(r.result).toContain('hello from the loopback server');
    const last = srv.seen.at(-1)!;
    expect(last.headers['user-agent']).toMatch(/Keel/);
    expect(last.headers.cookie).toBeUndefined();
  });

  it('reports an HTTP error status as a result, not a failure', async () => {
    const { run } = await boot(allow);
    const r = await run('http_fetch', { url: `${srv.base}/missing` });
    expect(r.success).toBe(true);
    expect(r.result).toContain('Status: 404');
    expect(r.result).toContain('no such page');
  });

  it('returns HTML without scripts, styles and comments, links kept', async () => {
    const { run } = await boot(allow);
    const r = await run('http_fetch', { url: `${srv.base}/article` });
    expect(r.success, r.result).toBe(true);
    expect(r.result).toContain('Olav Brekke');
    expect(r.result).toContain('href="/news"');
    expect(r.result).not.toContain('SCRIPT-NOISE');
    expect(r.result).not.toContain('color: red');
  });

  it('does not dump binary content', async () => {
    const { run } = await boot(allow);
    const r = await run('http_fetch', { url: `${srv.base}/binary` });
    expect(r.success).toBe(true);
    expect(r.result).toMatch(/binary content of type image\/png, \d+ bytes read; not shown/);
  });

  it('follows redirects up to webMaxRedirects and errors past it or on a loop', async () => {
    const { run } = await boot(allow);
    const ok = await run('http_fetch', { url: `${srv.base}/chain/5` });
    expect(ok.success, ok.result).toBe(true);
    expect(ok.result).toContain('end of the chain');
    expect(ok.result).toContain(`Final URL: ${srv.base}/chain/0`);
    const tooMany = await run('http_fetch', { url: `${srv.base}/chain/6` });
    expect(tooMany.success).toBe(false);
    expect(tooMany.result).toMatch(/Too many redirects .* more than 5 \(webMaxRedirects\)/);
    const before = srv.seen.length;
    const loop = await run('http_fetch', { url: `${srv.base}/loop` });
    expect(loop.success).toBe(false);
    expect(loop.result).toMatch(/Too many redirects/);
    expect(srv.seen.length - before).toBe(6);
  });

  it('honours a lower webMaxRedirects', async () => {
    const { run } = await boot({ ...allow, webMaxRedirects: 1 });
    expect((await run('http_fetch', { url: `${srv.base}/chain/1` })).success).toBe(true);
    const r = await run('http_fetch', { url: `${srv.base}/chain/2` });
    expect(r.success).toBe(false);
    expect(r.result).toMatch(/more than 1/);
  });

  it('cuts the body at maxBytes, never above webFetchMaxBytes', async () => {
    const { run } = await boot({ ...allow, webFetchMaxBytes: 2048 });
    const small = await run('http_fetch', { url: `${srv.base}/big`, maxBytes: 1000 });
    expect(small.success).toBe(true);
    expect(small.result).toContain('Truncated: only the first 1000 bytes were read.');
    expect(small.result).toContain('x'.repeat(1000));
    expect(small.result).not.toContain('x'.repeat(1001));
    const capped = await run('http_fetch', { url: `${srv.base}/big`, maxBytes: 10_000_000 });
    expect(capped.result).toContain('x'.repeat(2048));
    expect(capped.result).not.toContain('x'.repeat(2049));
    const whole = await run('http_fetch', { url: `${srv.base}/plain` });
    expect(whole.result).not.toContain('Truncated');
  });

  it('times out on a server that does not answer, or does not finish the body', async () => {
    const { run } = await boot({ ...allow, webFetchTimeoutMs: 300 });
    for (const path of ['/hang', '/slow']) {
      const r = await run('http_fetch', { url: `${srv.base}${path}` });
      expect(r.success, path).toBe(false);
      expect(r.result, path).toMatch(/timed out after 300 ms \(webFetchTimeoutMs\)/);
    }
  });

  it('rejects malformed arguments by schema', async () => {
    const { run } = await boot(allow);
    expect((await run('http_fetch', {})).code).toBe('KEEL_E_SKILL_INVALID_ARGS');
    expect((await run('http_fetch', { url: `${srv.base}/plain`, maxBytes: 0 })).code).toBe('KEEL_E_SKILL_INVALID_ARGS');
    expect((await run('http_fetch', { url: `${srv.base}/plain`, method: 'POST' })).code).toBe('KEEL_E_SKILL_INVALID_ARGS');
  });

  it('sends the configured user agent', async () => {
    const { run } = await boot({ ...allow, webUserAgent: 'KeelTest/9.9' });
    await run('http_fetch', { url: `${srv.base}/plain` });
    expect(srv.seen.at(-1)!.headers['user-agent']).toBe('KeelTest/9.9');
  });

  it('still refuses non-http schemes with private addresses allowed', async () => {
    const { run } = await boot(allow);
    const r = await run('http_fetch', { url: 'file:///etc/hostname' });
    expect(r.success).toBe(false);
    expect(r.result).toMatch(/only http and https/);
  });
});

describe('web capability fetch', () => {
  it('returns url, status, content type, body and truncated', async () => {
    const { web } = await boot(allow);
    const r = await web.fetch(`${srv.base}/chain/2`);
    expect(r).toEqual({ url: `${srv.base}/chain/0`, status: 200, contentType: 'text/plain', body: 'end of the chain', truncated: false });
    const j = await web.fetch(`${srv.base}/json`, { accept: 'application/json' });
    expect(JSON.parse(j.body)).toEqual({ answer: 42 });
    expect(srv.seen.at(-1)!.headers.accept).toBe('application/json');
  });

  it('truncates at maxBytes, also after decompression', async () => {
    const { web } = await boot(allow);
    const r = await web.fetch(`${srv.base}/big`, { maxBytes: 500 });
    expect(r.truncated).toBe(true);
    expect(r.body).toBe('x'.repeat(500));
    const bomb = await web.fetch(`${srv.base}/big-gzip`, { maxBytes: 10_000 });
    expect(bomb.truncated).toBe(true);
    expect(bomb.body).toBe('y'.repeat(10_000));
  });

  it('decodes gzip and the charset of the content type, a BOM-less meta charset, Shift_JIS', async () => {
    const { web } = await boot(allow);
    expect((await web.fetch(`${srv.base}/gzip`)).body).toBe('compressed hello ünïcode');
    expect((await web.fetch(`${srv.base}/latin1`)).body).toBe('café à Nîmes');
    expect((await web.fetch(`${srv.base}/sjis`)).body).toBe('日本');
    const meta = await web.fetch(`${srv.base}/meta-charset`);
    expect(meta.body).toContain('\u201chi\u201d \u20ac');
  });

  it('stops when the caller aborts', async () => {
    const { web } = await boot(allow);
    const ac = new AbortController();
    const p = web.fetch(`${srv.base}/hang`, { signal: ac.signal });
    setTimeout(() => ac.abort(), 50);
    await expect(p).rejects.toMatchObject({ code: 'KEEL_E_WEB_ABORTED' });
  });
});

describe('web capability checkHost', () => {
  it('refuses hosts that are or resolve to non-public addresses, and passes public ones', async () => {
    const { web } = await boot();
    expect(await web.checkHost!('127.0.0.1')).toBe('127.0.0.1 is loopback');
    expect(await web.checkHost!('[::1]')).toBe('::1 is loopback');
    expect(await web.checkHost!('10.1.2.3')).toMatch(/^10\.1\.2\.3 is private/);
    expect(await web.checkHost!('localhost')).toMatch(/^localhost resolves to (127\.0\.0\.1|::1), which is loopback$/);
    expect(await web.checkHost!('93.184.216.34')).toBeUndefined();
    expect(await web.checkHost!('no-such-host.invalid')).toMatch(/^no-such-host\.invalid does not resolve/);
  });

  it('lets every host through when webAllowPrivateNetwork is true (one switch for http_fetch and the browser)', async () => {
    const { web } = await boot(allow);
    expect(await web.checkHost!('127.0.0.1')).toBeUndefined();
    expect(await web.checkHost!('10.1.2.3')).toBeUndefined();
  });
});
