/**
 * The SSRF guard: with webAllowPrivateNetwork false (the default) nothing on loopback, private, link-local or
 * other non-public addresses is fetched, however the address is written, and no request reaches the server.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LookupAddress } from 'node:dns';
import { blockedReason } from '../../../plugins/web/src/address.js';
import { guardedFetch, type FetchSettings } from '../../../plugins/web/src/fetch.js';
import { boot, cleanup, startServer, type TestServer } from './harness.js';

let srv: TestServer;
beforeAll(async () => {
  srv = await startServer();
});
afterAll(async () => {
  await srv.close();
});
afterEach(cleanup);

describe('web SSRF guard (webAllowPrivateNetwork false)', () => {
  const table = (port: number): Array<[string, RegExp]> => [
    [`http://127.0.0.1:${port}/plain`, /127\.0\.0\.1 is a loopback address/],
    [`http://localhost:${port}/plain`, /localhost resolves to (127\.0\.0\.1|::1), a loopback address/],
    [`http://2130706433:${port}/plain`, /127\.0\.0\.1 is a loopback/],
    [`http://0x7f000001:${port}/plain`, /127\.0\.0\.1 is a loopback/],
    [`http://0177.0.0.1:${port}/plain`, /127\.0\.0\.1 is a loopback/],
    [`http://127.1:${port}/plain`, /127\.0\.0\.1 is a loopback/],
    [`http://0x7f.1:${port}/plain`, /127\.0\.0\.1 is a loopback/],
    [`http://017700000001:${port}/plain`, /127\.0\.0\.1 is a loopback/],
    [`http://127.000.000.001:${port}/plain`, /127\.0\.0\.1 is a loopback/],
    [`http://%31%32%37.0.0.1:${port}/plain`, /127\.0\.0\.1 is a loopback/],
    [`http://\uff11\uff12\uff17.0.0.1:${port}/plain`, /127\.0\.0\.1 is a loopback/],
    [`http://127.0.0.1.:${port}/plain`, /127\.0\.0\.1 is a loopback/],
    [`http://LOCALHOST:${port}/plain`, /localhost resolves to (127\.0\.0\.1|::1), a loopback address/],
    [`http://[::1]:${port}/plain`, /::1 is a loopback/],
    [`http://[::ffff:127.0.0.1]:${port}/plain`, /loopback \(IPv4-mapped 127\.0\.0\.1\)/],
    [`http://[::ffff:7f00:1]:${port}/plain`, /loopback \(IPv4-mapped 127\.0\.0\.1\)/],
    [`http://[64:ff9b::7f00:1]:${port}/plain`, /loopback \(NAT64 127\.0\.0\.1\)/],
    [`https://127.0.0.1:${port}/plain`, /loopback/],
    [`http://0.0.0.0:${port}/plain`, /unspecified/],
    [`http://0:${port}/plain`, /unspecified/],
    [`http://[::]:${port}/plain`, /unspecified/],
    [`http://[::ffff:0.0.0.0]:${port}/plain`, /an unspecified .*IPv4-mapped 0\.0\.0\.0/],
    ['http://10.0.0.1/', /10\.0\.0\.1 is a private address/],
    ['http://172.16.5.4/', /private/],
    ['http://192.168.1.1/admin', /private/],
    ['http://169.254.169.254/latest/meta-data/', /link-local/],
    ['http://[::ffff:169.254.169.254]/latest/meta-data/', /link-local \(IPv4-mapped/],
    ['http://[::ffff:a9fe:a9fe]/', /link-local/],
    ['http://100.64.0.1/', /CGNAT/],
    ['http://[fd00::1]/', /unique local/],
    ['http://[fe80::1]/', /link-local/],
    ['http://224.0.0.1/', /multicast/],
    ['http://[ff02::1]/', /multicast/],
    ['http://user:pass@127.0.0.1/', /loopback/],
  ];

  it('refuses every loopback, private and encoded address through http_fetch, and nothing reaches the server', async () => {
    const { run } = await boot({ webFetchTimeoutMs: 3000 });
    const before = srv.seen.length;
    const rows = table(srv.port);
    expect(rows.length).toBeGreaterThanOrEqual(15);
    for (const [url, why] of rows) {
      const r = await run('http_fetch', { url });
      expect(r.success, `${url} must be refused`).toBe(false);
      expect(r.result, url).toMatch(/Refused to fetch/);
      expect(r.result, url).toMatch(why);
      expect(r.result, url).toContain('webAllowPrivateNetwork');
    }
    expect(srv.seen.length).toBe(before);
  });

  it('refuses the same through extract_article and the web capability', async () => {
    const { run, web } = await boot();
    const before = srv.seen.length;
    const r = await run('extract_article', { url: `${srv.base}/article` });
    expect(r.success).toBe(false);
    expect(r.result).toMatch(/Refused to fetch .*loopback/);
    await expect(web.fetch(`http://2130706433:${srv.port}/plain`)).rejects.toMatchObject({ code: 'KEEL_E_WEB_REFUSED' });
    await expect(web.fetch(`http://localhost:${srv.port}/plain`)).rejects.toThrow(/loopback/);
    expect(srv.seen.length).toBe(before);
  });

  it('refuses non-http schemes', async () => {
    const { run } = await boot();
    for (const url of [
      'file:///etc/passwd',
      'ftp://example.com/file',
      `gopher://127.0.0.1:${srv.port}/`,
      'data:text/plain,hello',
      'javascript:alert(1)',
    ]) {
      const r = await run('http_fetch', { url });
      expect(r.success, url).toBe(false);
      expect(r.result, url).toMatch(/only http and https URLs can be fetched/);
    }
    const bad = await run('http_fetch', { url: 'not a url' });
    expect(bad.result).toMatch(/Not a valid URL/);
  });
});

/**
 * Hops and resolution: these call the fetch with two test seams, an address check that treats 127.0.0.1 (the
 * test server) as public and everything else as usual, and a resolver standing in for DNS.
 */
describe('web SSRF guard across redirects and DNS', () => {
  const base = (extra: Partial<FetchSettings> = {}): FetchSettings => ({
    allowPrivate: false,
    timeoutMs: 3000,
    maxBytes: 1 << 20,
    maxRedirects: 5,
    userAgent: 'test',
    isBlocked: (ip) => (ip === '127.0.0.1' ? undefined : blockedReason(ip)),
    ...extra,
  });

  it('the seam lets the test server through', async () => {
    const r = await guardedFetch(`${srv.base}/plain`, base());
    expect(r.body).toBe('hello from the loopback server');
  });

  it('refuses a redirect to a loopback, private or metadata address', async () => {
    for (const [to, why] of [
      [`http://127.0.0.2:${srv.port}/plain`, /127\.0\.0\.2 is a loopback/],
      [`http://2130706434:${srv.port}/plain`, /127\.0\.0\.2 is a loopback/],
      [`http://[::1]:${srv.port}/plain`, /::1 is a loopback/],
      ['http://169.254.169.254/latest/meta-data/', /link-local/],
      ['http://[::ffff:192.168.0.1]/', /private/],
    ] as const) {
      const before = srv.seen.length;
      await expect(guardedFetch(`${srv.base}/redirect?to=${encodeURIComponent(to)}`, base()), to).rejects.toThrow(why);
      expect(srv.seen.length - before).toBe(1); // only the first hop
    }
  });

  it('refuses a redirect to a host name that resolves to a private address, even when only one of its addresses is', async () => {
    const resolve = async (host: string): Promise<LookupAddress[]> =>
      host === 'internal.test'
        ? [{ address: '10.0.0.5', family: 4 }]
        : host === 'mixed.test'
          ? [
              { address: '127.0.0.1', family: 4 },
              { address: '192.168.0.1', family: 4 },
            ]
          : [{ address: '127.0.0.1', family: 4 }];
    await expect(
      guardedFetch(`${srv.base}/redirect?to=${encodeURIComponent(`http://internal.test:${srv.port}/plain`)}`, base({ resolve })),
    ).rejects.toThrow(/internal\.test resolves to 10\.0\.0\.5, a private address/);
    await expect(guardedFetch(`http://mixed.test:${srv.port}/plain`, base({ resolve }))).rejects.toThrow(
      /mixed\.test resolves to 192\.168\.0\.1/,
    );
  });

  it('connects to the address it checked: one resolution per hop, so a rebinding answer is never used', async () => {
    let calls = 0;
    // First answer passes the check; any later one would be a loopback address the check refuses.
    const resolve = async (): Promise<LookupAddress[]> => [{ address: calls++ === 0 ? '127.0.0.1' : '127.0.0.2', family: 4 }];
    const r = await guardedFetch(`http://rebind.test:${srv.port}/plain`, base({ resolve }));
    expect(r.body).toBe('hello from the loopback server');
    expect(calls).toBe(1);
    // A name the resolver answers with a refused address never reaches a socket.
    let second = 0;
    const rebound = async (): Promise<LookupAddress[]> => [{ address: second++ === 0 ? '127.0.0.2' : '127.0.0.1', family: 4 }];
    const before = srv.seen.length;
    await expect(guardedFetch(`http://rebind.test:${srv.port}/plain`, base({ resolve: rebound }))).rejects.toThrow(
      /rebind\.test resolves to 127\.0\.0\.2/,
    );
    expect(srv.seen.length).toBe(before);
  });
});
