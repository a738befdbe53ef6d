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
  it('answers / with a JSON 404 that points at the API', async () => {
    const bare = await startGateway();
    try {
      const r = await raw(bare.port, { path: '/' });
      expect(r.status).toBe(404);
      expect(JSON.parse(r.body)).toEqual({ error: 'Not Found', message: expect.stringContaining('/api') });
      expect((await raw(bare.port, { path: '/../etc/passwd' })).status).toBe(404);
    } finally {
      await bare.close();
    }
  });
});
