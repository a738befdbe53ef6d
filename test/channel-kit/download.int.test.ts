/**
 * The kit's inbound file download against a loopback HTTP server: the bytes land under downloads/<channel> with a
 * safe name, the 20 MB cap holds whatever the server announces (or does not), and failures become notes.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DOWNLOAD_LIMIT_BYTES, downloadTo, safeFileName, saveInboundFiles } from '../../sdk/channel-kit/index.js';
import { rm, tmp } from '../helpers.js';

let server: Server;
let base: string;
let home: string;
const seen: Array<{ path: string; auth: string | undefined }> = [];

beforeEach(async () => {
  home = tmp('keel-dl-');
  seen.length = 0;
  server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', auth: req.headers.authorization });
    if (req.url === '/small') return res.end('hello');
    if (req.url === '/announced-huge') {
      res.writeHead(200, { 'content-length': String(DOWNLOAD_LIMIT_BYTES + 1) });
      return res.end();
    }
    if (req.url === '/streamed-huge') {
      // Chunked, no length: the cap must hold while the bytes arrive.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(1024 * 1024, 1);
      let sent = 0;
      const pump = () => {
        while (sent <= DOWNLOAD_LIMIT_BYTES + chunk.length) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      res.on('error', () => undefined);
      return pump();
    }
    res.writeHead(500);
    res.end('boom');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterEach(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  rm(home);
});

describe('inbound file downloads', () => {
  it('saves under downloads/<channel>/<prefix>_<safe name> with the given headers', async () => {
    const path = await downloadTo({
      url: `${base}/small`,
      home,
      channel: 'chatX',
      prefix: 'C1_5',
      name: '../../etc/pass wd',
      headers: { authorization: 'Bearer t' },
    });
    expect(path).toBe(join(home, 'downloads', 'chatX', 'C1_5__.._etc_pass_wd'));
    expect(readFileSync(path, 'utf8')).toBe('hello');
    expect(seen[0]!.auth).toBe('Bearer t');
    expect(safeFileName('...')).toBe('file');
    expect(safeFileName('a'.repeat(300))).toHaveLength(100);
  });

  it('refuses a file over 20 MB by the platform size, by Content-Length, and while streaming, leaving nothing behind', async () => {
    const o = { home, channel: 'chatX', prefix: 'p', name: 'big.bin' };
    await expect(downloadTo({ ...o, url: `${base}/small`, size: DOWNLOAD_LIMIT_BYTES + 1 })).rejects.toThrow(/over the 20\.0 MB limit/);
    expect(seen).toHaveLength(0);
    await expect(downloadTo({ ...o, url: `${base}/announced-huge` })).rejects.toThrow(/over the 20\.0 MB limit/);
    await expect(downloadTo({ ...o, url: `${base}/streamed-huge` })).rejects.toThrow(/over the 20\.0 MB limit/);
    expect(existsSync(join(home, 'downloads', 'chatX', 'p_big.bin'))).toBe(false);
    await expect(downloadTo({ ...o, url: 'file:///etc/passwd' })).rejects.toThrow(/not http/);
  });

  it('saveInboundFiles keeps what it could save and notes the rest', async () => {
    const warned: string[] = [];
    const log = { debug() {}, info() {}, warn: (m: string) => warned.push(m), error() {} };
    const r = await saveInboundFiles(
      [
        { url: `${base}/small`, name: 'a.png', mime: 'image/png' },
        { url: `${base}/broken`, name: 'b.txt' },
        { url: undefined, name: 'c.txt' },
      ],
      { home, channel: 'chatX', prefix: 'm1', platform: 'X', log, headers: () => ({ authorization: 'Bearer secret-token' }) },
    );
    expect(r.attachments).toEqual([
      { path: join(home, 'downloads', 'chatX', 'm1_1_a.png'), name: 'a.png', kind: 'photo', mime: 'image/png' },
    ]);
    expect(r.notes).toEqual([
      '[file shared on X: b.txt; it could not be downloaded: HTTP 500]',
      '[file shared on X: c.txt; it could not be downloaded: the platform gave no download address]',
    ]);
    expect(warned).toHaveLength(2);
    expect(warned.join('\n')).not.toContain('secret-token');
    expect(readdirSync(join(home, 'downloads', 'chatX'))).toEqual(['m1_1_a.png']);
  });
});
