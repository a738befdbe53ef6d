/**
 * Helpers of the gateway WebSocket tests: a kernel with the gateway listening on 127.0.0.1 port 0 and the fake
 * agent, and a `ws` client that keeps every message so tests can wait for the one they expect (bounded waits).
 */
import WebSocket from 'ws';
import type { Kernel } from '../../../kernel/kernel.js';
import { bootKernel, installFakeAgent } from '../../../testing/index.js';
import { waitFor } from '../../helpers.js';

export interface Gateway {
  home: string;
  kernel: Kernel;
  port: number;
  url(path?: string, query?: Record<string, string>): string;
  close(): Promise<void>;
}

/** The port the gateway bound, from the capability the gateway provides. */
function boundPort(kernel: Kernel): number | undefined {
  const cap = kernel.registry.use<unknown>('gateway:address');
  const v = typeof cap === 'function' ? (cap as () => unknown)() : cap;
  const port = (v as { port?: unknown } | undefined)?.port;
  return typeof port === 'number' && port > 0 ? port : undefined;
}

export async function startGateway(overrides: Record<string, unknown> = {}, host = '127.0.0.1'): Promise<Gateway> {
  const t = await bootKernel({
    builtins: true,
    before: (home) => installFakeAgent(home),
    runAgent: true,
    runnerIdleMs: 1000,
    config: { gatewayAutoStart: true, gatewayPort: 0, gatewayHost: host, ...overrides },
  });
  const { kernel, home } = t;
  const status = kernel.host.statuses().find((s) => s.id === 'gateway');
  if (status?.state !== 'loaded') {
    await t.close();
    throw new Error(`gateway did not load: ${status?.state} ${status?.reason ?? ''}`);
  }
  const port = await waitFor(() => boundPort(kernel), 'the gateway address', 5000);
  return {
    home,
    kernel,
    port,
    url(path = '/', query = {}) {
      const q = new URLSearchParams(query).toString();
      return `ws://127.0.0.1:${port}${path}${q ? `?${q}` : ''}`;
    },
    close: t.close,
  };
}

export type Msg = { type: string; [k: string]: any };

export class Client {
  readonly messages: Msg[] = [];
  private waiters: Array<() => void> = [];
  closed: { code: number; reason: string } | undefined;

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data, isBinary) => {
      if (!isBinary) this.messages.push(JSON.parse(data.toString()) as Msg);
      this.wake();
    });
    ws.on('close', (code, reason) => {
      this.closed = { code, reason: reason.toString() };
      this.wake();
    });
    ws.on('error', () => this.wake());
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** The first kept message matching `pred` (removed from the list), waiting for it up to `timeoutMs`. */
  async next(pred: (m: Msg) => boolean, what: string, timeoutMs = 10_000): Promise<Msg> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.messages.findIndex(pred);
      if (i >= 0) return this.messages.splice(i, 1)[0]!;
      if (this.closed) throw new Error(`socket closed (${this.closed.code}) while waiting for ${what}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; have: ${JSON.stringify(this.messages).slice(0, 2000)}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  send(msg: unknown): void {
    this.ws.send(typeof msg === 'string' ? msg : JSON.stringify(msg));
  }

  private seq = 0;
  /** Sends an action with a fresh id and waits for its reply. */
  async request(action: string, data?: unknown, timeoutMs = 10_000): Promise<Msg> {
    const id = `r${++this.seq}`;
    this.send({ action, id, ...(data !== undefined ? { data } : {}) });
    return this.next((m) => m.type === 'reply' && m.id === id, `reply to ${action} ${id}`, timeoutMs);
  }

  async waitClosed(what: string, timeoutMs = 10_000): Promise<{ code: number; reason: string }> {
    await waitFor(() => this.closed, what, timeoutMs);
    return this.closed!;
  }

  close(): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.terminate();
  }
}

export type Upgrade = { ok: true; client: Client } | { ok: false; status: number; body: string };

/** Opens a socket; a refused upgrade resolves with its HTTP status and body. */
export function connect(url: string, headers: Record<string, string> = {}, timeoutMs = 10_000): Promise<Upgrade> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const client = new Client(ws);
    const t = setTimeout(() => {
      ws.terminate();
      reject(new Error(`timed out connecting to ${url}`));
    }, timeoutMs);
    ws.once('open', () => {
      clearTimeout(t);
      resolve({ ok: true, client });
    });
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        clearTimeout(t);
        ws.terminate();
        resolve({ ok: false, status: res.statusCode ?? 0, body });
      });
    });
    ws.once('error', (e) => {
      clearTimeout(t);
      reject(e);
    });
  });
}

/** Connects and expects success. */
export async function open(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const r = await connect(url, headers);
  if (!r.ok) throw new Error(`upgrade refused: ${r.status} ${r.body}`);
  return r.client;
}

/**
 * A socket to the gateway on 127.0.0.1:`port`, authenticated by `key` in the `keel-key.<base64url>` subprotocol (as
 * browsers do), once its first `status` message is in.
 */
export async function keySocket(port: number, key: string): Promise<Client> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/`, ['keel.v1', `keel-key.${Buffer.from(key).toString('base64url')}`]);
  const c = new Client(ws);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  await c.next((m) => m.type === 'status', 'status');
  return c;
}
