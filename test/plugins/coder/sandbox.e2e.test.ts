/**
 * The sandbox on its own: legitimate snippets work; escape attempts (Keel's config file, environment secrets,
 * writes outside the temp folder, child processes, workers, the network) fail.
 */
import { mkdtempSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:net';
import { networkNamespacePrefix, runSandboxed, type SandboxRequest } from '../../../plugins/coder/src/sandbox.js';

let home: string;
const SECRET = 'sk-test-sandbox-secret-4711';

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'keel-sbx-home-'));
  writeFileSync(join(home, 'keel.config.yaml'), `providerAApiKey: ${SECRET}\n`, { mode: 0o600 });
  process.env.KEEL_SANDBOX_TEST_SECRET = SECRET;
});

afterAll(() => {
  delete process.env.KEEL_SANDBOX_TEST_SECRET;
  rmSync(home, { recursive: true, force: true });
});

const run = (body: string, extra: Partial<SandboxRequest> = {}) =>
  runSandboxed({ body, timeoutMs: 10_000, maxOutputBytes: 65_536, ...extra });

describe('sandbox: legitimate code', () => {
  it('prints, returns JSON, gets its args and may use its own temp folder', async () => {
    const r = await run(
      `const fs = await import('node:fs');
       fs.writeFileSync('scratch.txt', 'hello');
       const n: number = args.n;
       console.log('printed', n);
       console.error('to stderr');
       return { double: n * 2, read: fs.readFileSync('scratch.txt', 'utf8') };`,
      { args: { n: 21 } },
    );
    expect(r).toMatchObject({ ok: true, exitCode: 0, timedOut: false, result: { double: 42, read: 'hello' } });
    expect(r.stdout).toBe('printed 21\n');
    expect(r.stderr).toContain('to stderr');
  });

  it('reports a thrown error and a compile error', async () => {
    const r = await run(`throw new Error('nope');`);
    expect(r).toMatchObject({ ok: false, exitCode: 1 });
    expect(r.error).toContain('nope');
    await expect(run(`return (;`)).rejects.toThrow(/does not compile: line 1/);
  });

  it('kills at the timeout with SIGKILL', async () => {
    const r = await run(`while (true) {}`, { timeoutMs: 500 });
    expect(r).toMatchObject({ ok: false, timedOut: true, signal: 'SIGKILL' });
    expect(r.durationMs).toBeLessThan(5000);
  });

  it('caps output', async () => {
    const r = await run(`process.stdout.write('x'.repeat(100_000)); return 1;`, { maxOutputBytes: 1024 });
    expect(r.stdout.length).toBe(1024);
    expect(r.truncated).toBe(true);
    expect(r.result).toBe(1);
  });
});

describe('sandbox: escape attempts fail', () => {
  it("cannot read Keel's config file", async () => {
    const file = join(home, 'keel.config.yaml');
    const r = await run(`const fs = await import('node:fs'); return fs.readFileSync(${JSON.stringify(file)}, 'utf8');`);
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/ERR_ACCESS_DENIED|Access to this API has been restricted/);
    expect(JSON.stringify(r)).not.toContain(SECRET);
    const listing = await run(`const fs = await import('node:fs'); return fs.readdirSync(${JSON.stringify(home)});`);
    expect(listing.ok).toBe(false);
  });

  it("cannot see Keel's environment secrets, directly or through /proc", async () => {
    expect(process.env.KEEL_SANDBOX_TEST_SECRET).toBe(SECRET);
    const r = await run(`return process.env;`);
    expect(r.ok).toBe(true);
    expect(Object.keys(r.result as object).sort()).toEqual(expect.arrayContaining(['HOME']));
    for (const k of Object.keys(r.result as object)) expect(['PATH', 'HOME', 'LANG']).toContain(k);
    expect(JSON.stringify(r.result)).not.toContain(SECRET);
    const proc = await run(`const fs = await import('node:fs'); return fs.readFileSync('/proc/' + process.ppid + '/environ', 'utf8');`);
    expect(proc.ok).toBe(false);
    expect(JSON.stringify(proc)).not.toContain(SECRET);
  });

  it('cannot write outside its temp folder', async () => {
    const target = join(home, 'pwned.txt');
    const r = await run(`const fs = await import('node:fs'); fs.writeFileSync(${JSON.stringify(target)}, 'x'); return 'wrote';`);
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/ERR_ACCESS_DENIED|restricted/);
    expect(existsSync(target)).toBe(false);
  });

  it('cannot spawn a child process', async () => {
    const r = await run(`const cp = await import('node:child_process'); return cp.execFileSync('/bin/echo', ['escaped']).toString();`);
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/ERR_ACCESS_DENIED|restricted/);
    expect(r.stdout).not.toContain('escaped');
  });

  it('cannot start a worker thread', async () => {
    const r = await run(`const { Worker } = await import('node:worker_threads'); new Worker('1', { eval: true }); return 'worker';`);
    expect(r.ok).toBe(false);
    expect(r.error).toMatch(/ERR_ACCESS_DENIED|restricted/);
  });

  it('has no network modules or fetch unless allowed (best effort)', async () => {
    const r = await run(`const out: string[] = [typeof fetch];
      for (const m of ['node:net', 'node:http', 'node:https', 'node:dgram']) { try { await import(m); out.push(m + ':ok'); } catch (e: any) { out.push(m + ':' + e.code); } }
      try { process.getBuiltinModule('node:net'); out.push('gbm:ok'); } catch (e: any) { out.push('gbm:' + e.code); }
      return out;`);
    expect(r.result).toEqual([
      'undefined',
      'node:net:ERR_ACCESS_DENIED',
      'node:http:ERR_ACCESS_DENIED',
      'node:https:ERR_ACCESS_DENIED',
      'node:dgram:ERR_ACCESS_DENIED',
      'gbm:ERR_ACCESS_DENIED',
    ]);
    const allowed = await run(`return typeof fetch;`, { network: true });
    expect(allowed.result).toBe('function');
  });
});

// Linux with unshare (util-linux) and the right to create a network namespace: root, or unprivileged user namespaces.
const netns = await networkNamespacePrefix();

describe.skipIf(!netns)('sandbox: network namespace', () => {
  let server: Server;
  let port = 0;
  let accepted = 0;
  beforeAll(async () => {
    server = createServer((s) => {
      accepted++;
      s.end('hello from the host\n');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  // The snippet gets the network modules (module layer off) and tries the host's loopback server.
  const connect = `const net = await import('node:net');
    return await new Promise((resolve) => {
      const s = net.connect(args.port, '127.0.0.1');
      s.setTimeout(3000, () => { s.destroy(); resolve('timeout'); });
      s.once('data', (d) => { s.destroy(); resolve('connected: ' + String(d).trim()); });
      s.once('error', (e) => resolve('error: ' + e.code));
    });`;

  it('reaches nothing, not even the host loopback, with the module block taken away', async () => {
    const r = await run(connect, { args: { port }, networkLayers: { modules: false } });
    expect(r.networkBlock).toBe('namespace');
    expect(r.result).toMatch(/^error: (ECONNREFUSED|ENETUNREACH|EADDRNOTAVAIL)$/);
    expect(accepted).toBe(0);
  });

  it('is what stops it: without the namespace the same snippet connects (control)', async () => {
    const r = await run(connect, { args: { port }, networkLayers: { modules: false, namespace: false } });
    expect(r.networkBlock).toBe('modules');
    expect(r.result).toBe('connected: hello from the host');
    expect(accepted).toBe(1);
  });

  it('is not used when the network is granted, and the timeout still kills the process', async () => {
    const granted = await run(connect, { args: { port }, network: true });
    expect(granted).toMatchObject({ networkBlock: 'none', result: 'connected: hello from the host' });
    const slow = await run(`await new Promise((r) => setTimeout(r, 60_000)); return 'late';`, { timeoutMs: 500 });
    expect(slow).toMatchObject({ ok: false, timedOut: true, networkBlock: 'namespace' });
  });
});
