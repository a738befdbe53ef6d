/**
 * A request body over gatewayBodyLimit: every client gets the 413 with its JSON `{error, message}`, Node's fetch
 * included (it says "fetch failed" when the server answers and closes before it has sent its body); a huge body
 * is still cut off at a bound and the gateway keeps serving.
 */
import { execFile } from 'node:child_process';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readQueueList } from '../../../kernel/queue/index.js';
import { startGateway, type Gw } from './harness.js';

const MiB = 1_048_576;
const LIMIT_MESSAGE =
  'Request body too large: the limit is 1 MiB (1048576 bytes); send a smaller body or raise the setting gatewayBodyLimit.';
let g: Gw;

beforeAll(async () => {
  g = await startGateway({ fakeAgent: true });
});
afterAll(async () => g?.close());

/**
 * The client runs in its own Node process, as a user's script does: in the gateway's own event loop the client
 * happens to read the answer before the reset, which hides the failure.
 */
const CLIENT = `
const base = process.argv[1];
const MiB = 1048576;
const out = [];
const post = async (body, extra = {}) => {
  try {
    const r = await fetch(base + '/api/tasks', { method: 'POST', headers: { 'content-type': 'application/json' }, body, ...extra });
    out.push({ status: r.status, body: await r.json() });
  } catch (e) {
    out.push({ failed: String(e) + ' ' + String(e.cause?.code ?? e.cause ?? '') });
  }
};
for (let i = 0; i < 5; i++) await post(JSON.stringify({ task: 'x'.repeat(2 * MiB) }));
// A streamed body (chunked, no Content-Length) of 3 MiB.
const chunk = new TextEncoder().encode('x'.repeat(64 * 1024));
let sent = 0;
await post(new ReadableStream({ pull(c) { if (sent >= 3 * MiB) return c.close(); sent += chunk.byteLength; c.enqueue(chunk); } }), { duplex: 'half' });
console.log(JSON.stringify(out));
`;

function runClient(base: string): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', CLIENT, base], { timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`client failed: ${err.message} ${stderr}`));
      resolve(JSON.parse(stdout) as unknown[]);
    });
  });
}

/** Sends a body of `total` bytes (Content-Length `declared`, or chunked) until the gateway stops reading. */
function pushUntilClosed(port: number, total: number, declared?: number): Promise<{ written: number; status: number }> {
  const chunk = Buffer.alloc(256 * 1024, 0x78);
  let written = 0;
  let status = 0;
  return new Promise((resolve) => {
    const req = request({
      host: '127.0.0.1',
      port,
      method: 'POST',
      path: '/api/tasks',
      agent: false,
      headers: { 'content-type': 'application/json', ...(declared ? { 'content-length': String(declared) } : {}) },
    });
    req.on('response', (res) => {
      status = res.statusCode ?? 0;
      res.resume();
    });
    const finish = () => resolve({ written, status });
    req.on('error', finish);
    req.on('close', finish);
    const pump = () => {
      while (written < total) {
        written += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      req.end();
    };
    pump();
  });
}

describe('gateway body limit', () => {
  it("answers Node's fetch of a 2 MiB body (and of a streamed 3 MiB one) with 413 and a JSON error in plain words", async () => {
    const results = await runClient(g.base);
    expect(results).toEqual(Array(6).fill({ status: 413, body: { error: 'Payload Too Large', message: LIMIT_MESSAGE } }));
    expect((await readQueueList(g.home)).pending).toEqual([]);
  });

  it('cuts a huge body off at a bound instead of reading it all, and keeps serving', async () => {
    // 1 GiB announced by Content-Length, and 1 GiB sent chunked without one: the gateway stops reading early.
    for (const declared of [1024 * MiB, undefined]) {
      const r = await pushUntilClosed(g.port, 1024 * MiB, declared);
      expect(r.written, `Content-Length ${declared}`).toBeLessThan(128 * MiB);
      expect([0, 413], `Content-Length ${declared}`).toContain(r.status);
    }
    const alive = await g.req('/api/status');
    expect(alive.status).toBe(200);
  });
});
