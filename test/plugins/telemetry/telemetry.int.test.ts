/**
 * The usage ping against a loopback server: exact payload, token header, timeout, stop during a ping, disabled,
 * the harmless default URL, and a stable installation id.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startKernel, type Kernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { discoverBuiltins } from '../../../kernel/plugins/discover.js';
import { rm, tmp, waitFor } from '../../helpers.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface Seen {
  req: IncomingMessage;
  body: string;
  closed: boolean;
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  vi.restoreAllMocks();
});

async function server(answer: boolean): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const hanging: ServerResponse[] = [];
  const s: Server = createServer((req, res) => {
    const entry: Seen = { req, body: '', closed: false };
    seen.push(entry);
    res.on('close', () => (entry.closed = true));
    req.setEncoding('utf8');
    req.on('data', (c: string) => (entry.body += c));
    req.on('end', () => {
      if (answer) res.writeHead(204).end();
      else hanging.push(res);
    });
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        for (const res of hanging) res.destroy();
        s.closeAllConnections();
        s.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}/v1/ping`, seen };
}

async function kernel(home: string, overrides: Record<string, unknown>, logs = new LogSink({ quiet: true })): Promise<Kernel> {
  const empty = tmp('keel-telemetry-builtins-');
  const extra = (await discoverBuiltins(join(ROOT, 'plugins'))).filter((c) => c.id === 'telemetry');
  const k = await startKernel({ home, builtinDir: empty, extraPlugins: extra, env: {}, watchSkills: false, logs, overrides });
  let stopped = false;
  cleanups.push(async () => {
    if (!stopped) await k.stop();
    rm(empty);
  });
  const stop = k.stop.bind(k);
  k.stop = async () => {
    stopped = true;
    await stop();
  };
  return k;
}

function home(): string {
  const h = tmp('keel-telemetry-');
  cleanups.push(() => rm(h));
  return h;
}

describe('usage ping', () => {
  it('POSTs exactly {version, installationId, uptimeSeconds, errorCounts} with counts and no content', async () => {
    const srv = await server(true);
    const h = home();
    const logs = new LogSink({ quiet: true });
    // Logged before the plugin starts: counted, never sent.
    logs.logger('test').error('SECRET-ERROR-CONTENT hostname=my-laptop');
    logs.logger('test').warn('SECRET-WARN-CONTENT');
    const k = await kernel(h, { usagePingUrl: srv.url }, logs);
    const hit = await waitFor(() => srv.seen.find((s) => s.req.complete), 'the ping');
    expect(hit.req.method).toBe('POST');
    expect(hit.req.headers['content-type']).toBe('application/json');
    expect(hit.req.headers.authorization).toBeUndefined();
    const body = JSON.parse(hit.body) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['errorCounts', 'installationId', 'uptimeSeconds', 'version']);
    expect(body.version).toBe(k.version);
    expect(body.installationId).toMatch(UUID);
    expect(body.installationId).toBe(readFileSync(join(h, 'installation-id'), 'utf8').trim());
    expect(Number.isInteger(body.uptimeSeconds)).toBe(true);
    expect(body.uptimeSeconds).toBeGreaterThanOrEqual(0);
    const counts = body.errorCounts as Record<string, unknown>;
    expect(Object.keys(counts).sort()).toEqual(['error', 'warn']);
    expect(counts.error).toBeGreaterThanOrEqual(1);
    expect(counts.warn).toBeGreaterThanOrEqual(1);
    expect(Number.isInteger(counts.error) && Number.isInteger(counts.warn)).toBe(true);
    expect(hit.body).not.toMatch(/SECRET|my-laptop|keel-telemetry-/);
    expect(srv.seen).toHaveLength(1);
  });

  it('usagePingToken defaults to the empty string (SPEC), and then no Authorization header is sent', async () => {
    const srv = await server(true);
    const k = await kernel(home(), { usagePingUrl: srv.url });
    expect(k.config.get('usagePingToken')).toBe('');
    expect(k.keys.entries().find((e) => e.key === 'usagePingToken')?.spec.default).toBe('');
    const hit = await waitFor(() => srv.seen.find((s) => s.req.complete), 'the ping');
    expect(hit.req.headers.authorization).toBeUndefined();
  });

  it('sends usagePingToken as a bearer token', async () => {
    const srv = await server(true);
    await kernel(home(), { usagePingUrl: srv.url, usagePingToken: 'tok-123' });
    const hit = await waitFor(() => srv.seen.find((s) => s.req.complete), 'the ping');
    expect(hit.req.headers.authorization).toBe('Bearer tok-123');
    expect(hit.body).not.toContain('tok-123');
  });

  it('abandons a ping the server never answers after usagePingTimeoutMs, silently', async () => {
    const srv = await server(false);
    const logs = new LogSink({ quiet: true });
    const k = await kernel(home(), { usagePingUrl: srv.url, usagePingTimeoutMs: 200 }, logs);
    const hit = await waitFor(() => srv.seen[0], 'the ping to arrive');
    // The client gives up: the server sees the connection close although it never answered.
    await waitFor(() => hit.closed, 'the ping to be aborted by its timeout');
    expect(k.host.status('telemetry')?.state).toBe('loaded');
    expect(logs.recent().filter((e) => e.tag === 'telemetry' && e.level !== 'info')).toEqual([]);
  });

  it('stop() aborts a ping in flight and does not wait for it', async () => {
    const srv = await server(false);
    const k = await kernel(home(), { usagePingUrl: srv.url, usagePingTimeoutMs: 120_000 });
    const hit = await waitFor(() => srv.seen[0], 'the ping to arrive');
    const stopped = await Promise.race([k.stop().then(() => 'stopped'), new Promise((r) => setTimeout(() => r('hung'), 10_000).unref())]);
    expect(stopped).toBe('stopped');
    expect(k.host.status('telemetry')?.state).toBe('stopped');
    await waitFor(() => hit.closed, 'the in-flight ping to be aborted');
  });

  it('sends nothing when disabled, and never contacts the default (.invalid) service', async () => {
    const srv = await server(true);
    const calls: string[] = [];
    const real = globalThis.fetch;
    vi.spyOn(globalThis, 'fetch').mockImplementation((input, init) => {
      calls.push(String(input instanceof Request ? input.url : input));
      return real(input, init);
    });
    const k1 = await kernel(home(), { usagePingUrl: srv.url, usagePingEnabled: false });
    const k2 = await kernel(home(), {});
    const k3 = await kernel(home(), { usagePingUrl: 'https://ping.example.invalid/x' });
    // A control kernel that does ping: once its request arrived, the others had the same chance.
    await kernel(home(), { usagePingUrl: srv.url });
    await waitFor(() => srv.seen.find((s) => s.req.complete), 'the control ping');
    await Promise.all([k1.stop(), k2.stop(), k3.stop()]);
    expect(srv.seen).toHaveLength(1);
    expect(calls).toEqual([srv.url]);
  });

  it('keeps the installation id across restarts', async () => {
    const srv = await server(true);
    const h = home();
    const k1 = await kernel(h, { usagePingUrl: srv.url });
    await waitFor(() => srv.seen.filter((s) => s.req.complete).length === 1, 'the first ping');
    await k1.stop();
    await kernel(h, { usagePingUrl: srv.url });
    await waitFor(() => srv.seen.filter((s) => s.req.complete).length === 2, 'the second ping');
    const [a, b] = srv.seen.map((s) => JSON.parse(s.body).installationId as string);
    expect(a).toMatch(UUID);
    expect(b).toBe(a);
    const other = await server(true);
    await kernel(home(), { usagePingUrl: other.url });
    const c = await waitFor(() => other.seen.find((s) => s.req.complete), 'a ping from another home');
    expect(JSON.parse(c.body).installationId).not.toBe(a);
  });
});
