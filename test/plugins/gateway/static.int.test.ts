/**
 * Static files at / from one folder, never outside it; /api always wins.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rm, tmp } from '../../helpers.js';
import { raw, startGateway, type Gw } from './harness.js';

let g: Gw;
let outside: string;
let site: string;

beforeAll(async () => {
  outside = tmp('keel-static-');
  site = join(outside, 'site');
  mkdirSync(join(site, 'api'), { recursive: true });
  mkdirSync(join(site, 'css'), { recursive: true });
  writeFileSync(join(site, 'index.html'), '<h1>dashboard</h1>');
  writeFileSync(join(site, 'css', 'app.css'), 'body{}');
  writeFileSync(join(site, 'api', 'status'), 'shadowed');
  writeFileSync(join(site, '.env'), 'SECRET=1');
  writeFileSync(join(outside, 'secret.txt'), 'TOP SECRET');
  g = await startGateway({ overrides: { gatewayStaticDir: site, gatewayApiKey: 'k' }, key: 'k' });
});
afterAll(async () => {
  await g?.close();
  rm(outside);
});

describe('static files', () => {
  it('serves index.html at / and files below the folder, without the API key', async () => {
    const root = await raw(g.port, { path: '/' });
    expect(root.status).toBe(200);
    expect(root.body).toContain('dashboard');
    expect(root.headers['content-type']).toMatch(/text\/html/);
    const css = await raw(g.port, { path: '/css/app.css' });
    expect(css.status).toBe(200);
    expect(css.body).toBe('body{}');
  });

  it('keeps /api first: the API answers, unknown /api paths are JSON 404s', async () => {
    const status = await g.req('/api/status');
    expect(status.status).toBe(200);
    expect(await status.json()).toHaveProperty('running');
    const unknown = await g.req('/api/x');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: 'Not Found', message: expect.any(String) });
  });

  it('gives 404 to every attempt to leave the folder, and to dotfiles and missing files', async () => {
    const attempts = [
      '/../secret.txt',
      '/../../../../etc/passwd',
      '/css/../../secret.txt',
      '/%2e%2e/secret.txt',
      '/%2E%2E/secret.txt',
      '/css/%2e%2e/%2e%2e/secret.txt',
      '/..%2fsecret.txt',
      '/..%2Fsecret.txt',
      '/%2e%2e%2fsecret.txt',
      '/%252e%252e/secret.txt',
      '/%252e%252e%252fsecret.txt',
      '/..\\secret.txt',
      '/%5c..%5csecret.txt',
      '/..%5csecret.txt',
      '/css/..%00/secret.txt',
      '/%c0%ae%c0%ae/secret.txt',
      '/.env',
      '/css/../.env',
      '/nothing-here.html',
      '//etc/passwd',
      '/%2fetc%2fpasswd',
    ];
    for (const path of attempts) {
      const r = await raw(g.port, { path });
      expect(r.status, path).toBe(404);
      expect(r.body, path).not.toContain('TOP SECRET');
      expect(r.body, path).not.toContain('root:');
      expect(r.body, path).not.toContain('SECRET=1');
    }
  });
});

describe('without a static folder', () => {
  it('serves the dashboard at / (gzip when accepted, strict page headers) and its assets; nothing else', async () => {
    const g = await startGateway();
    try {
      const page = await raw(g.port, { path: '/' });
      expect(page.status).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.body).toContain('/assets/app.js');
      expect(String(page.headers['content-security-policy'])).toContain("script-src 'self'");
      const js = await raw(g.port, { path: '/assets/app.js', headers: { 'accept-encoding': 'gzip, br' } });
      expect(js.status).toBe(200);
      expect(js.headers['content-encoding']).toBe('gzip');
      expect(js.headers['content-type']).toMatch(/javascript/);
      const css = await raw(g.port, { path: '/assets/app.css' });
      expect(css.status).toBe(200);
      expect(css.headers['content-encoding']).toBeUndefined();
      for (const p of ['/assets/nope.js', '/assets/..%2fpackage.json', '/assets/index.html.gz', '/../etc/passwd'])
        expect((await raw(g.port, { path: p })).status, p).toBe(404);
    } finally {
      await g.close();
    }
  });

  it('the first load of the dashboard (page, script, styles as sent gzipped) stays within 150 KB', async () => {
    const g = await startGateway();
    try {
      let total = 0;
      for (const p of ['/', '/assets/app.js', '/assets/app.css']) {
        const r = await fetch(`${g.base}${p}`, { headers: { 'accept-encoding': 'gzip' } });
        expect(r.status).toBe(200);
        // fetch decodes the body; the length on the wire is the header (the gzip file).
        total += Number(r.headers.get('content-length'));
        await r.arrayBuffer();
      }
      expect(total).toBeGreaterThan(1000);
      expect(total).toBeLessThanOrEqual(150 * 1024);
    } finally {
      await g.close();
    }
  });

  it('answers / with a JSON 404 that points at the API when the dashboard plugin is denied', async () => {
    const bare = await startGateway({ deny: ['dashboard'] });
    try {
      const r = await raw(bare.port, { path: '/' });
      expect(r.status).toBe(404);
      expect(JSON.parse(r.body)).toEqual({ error: 'Not Found', message: expect.stringContaining('/api') });
      expect((await raw(bare.port, { path: '/assets/app.js' })).status).toBe(404);
      expect((await raw(bare.port, { path: '/../etc/passwd' })).status).toBe(404);
    } finally {
      await bare.close();
    }
  });
});
