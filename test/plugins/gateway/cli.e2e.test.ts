/**
 * `keel gateway` through the built CLI (dist/cli.js): a busy port, and background mode with status and stop.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rm, tmp, waitFor } from '../../helpers.js';

const CLI = join(import.meta.dirname, '..', '..', '..', 'dist', 'cli.js');

function keel(home: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, KEEL_HOME: home }, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

function listen(port = 0): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(port, '127.0.0.1', () => resolve(s));
  });
}

async function freePort(): Promise<number> {
  const s = await listen();
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

const homes: string[] = [];
const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
  for (const h of homes.splice(0)) {
    await keel(h, ['stop', '--timeout', '3000']);
    rm(h);
  }
});
function home(): string {
  const h = tmp('keel-gw-cli-');
  homes.push(h);
  return h;
}

describe('keel gateway', () => {
  it('ends with a clear message naming -p and exit 1 when the port is in use, leaving nothing behind', async () => {
    const busy = await listen();
    servers.push(busy);
    const port = (busy.address() as { port: number }).port;
    const h = home();
    const r = await keel(h, ['gateway', '-p', String(port), '-h', '127.0.0.1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`Port ${port} is already in use`);
    expect(r.stderr).toContain('-p');
    expect(existsSync(join(h, 'run', 'gateway.pid'))).toBe(false);
    const st = await keel(h, ['status', '--json']);
    expect((JSON.parse(st.stdout) as { processes: unknown[] }).processes).toEqual([]);
  });

  it('refuses a port that is not a number with exit 2', async () => {
    const r = await keel(home(), ['gateway', '-p', 'eighty']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--port');
  });

  it('runs in the background (-b): answers with the key, shows in keel status, stops with keel stop', async () => {
    const h = home();
    const port = await freePort();
    const start = await keel(h, ['gateway', '-b', '-p', String(port), '-h', '127.0.0.1', '-k', 'bg-key']);
    expect(start.code, start.stderr).toBe(0);
    expect(start.stdout).toMatch(new RegExp(`background \\(pid \\d+\\) on http://127\\.0\\.0\\.1:${port};`));
    const url = `http://127.0.0.1:${port}/api/status`;
    const res = await waitFor(
      async () => {
        try {
          const r = await fetch(url, { headers: { 'x-api-key': 'bg-key' } });
          return r.status === 200 ? r : undefined;
        } catch {
          return undefined;
        }
      },
      'the background gateway to answer',
      20_000,
    );
    expect(await res.json()).toHaveProperty('version');
    expect((await fetch(url)).status).toBe(401);

    const st = await keel(h, ['status']);
    expect(st.stdout).toMatch(/Also running: gateway \(pid \d+\)/);
    // where it listens, and what to open in a browser
    expect(st.stdout).toContain(`Gateway: http://127.0.0.1:${port} (http://localhost:${port}/ in a browser for the dashboard).`);
    const json = JSON.parse((await keel(h, ['status', '--json'])).stdout) as { processes: Array<{ name: string; gateway?: string }> };
    expect(json.processes.find((p) => p.name === 'gateway')?.gateway).toBe(`http://127.0.0.1:${port}`);
    expect(readFileSync(join(h, 'gateway.log'), 'utf8')).toContain(`Gateway listening on http://127.0.0.1:${port}`);

    const stop = await keel(h, ['stop', '--timeout', '5000']);
    expect(stop.code).toBe(0);
    await waitFor(async () => {
      try {
        await fetch(url);
        return false;
      } catch {
        return true;
      }
    }, 'the gateway to stop listening');
    expect(existsSync(join(h, 'run', 'gateway.pid'))).toBe(false);
    expect((await keel(h, ['status'])).stdout).not.toMatch(/gateway/);
  });
});
