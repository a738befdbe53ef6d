/**
 * The gateway as `keel ui` sees it: REST calls with the key in a header, and one WebSocket that reconnects by
 * itself with backoff and asks for what it missed (`?since=<seq>`), so the screen never needs a restart.
 */
import WebSocket from 'ws';
import { errorMessage } from '../../../sdk/index.js';

export interface GatewayMessage {
  type: string;
  event?: string;
  data?: Record<string, unknown>;
  seq?: number;
}

export type LinkState = 'connecting' | 'connected' | 'offline';

export class GatewayClient {
  private ws: WebSocket | undefined;
  private lastSeq: number | undefined;
  private stopped = false;
  private retry = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly base: string,
    private readonly apiKey: string | undefined,
  ) {}

  private headers(json: boolean): Record<string, string> {
    return { ...(json ? { 'content-type': 'application/json' } : {}), ...(this.apiKey ? { 'x-api-key': this.apiKey } : {}) };
  }

  /** A REST call; resolves with the parsed body, rejects with the gateway's `message` on an error status. */
  async call<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(`${this.base}${path}`, {
      method,
      headers: this.headers(body !== undefined),
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      parsed = { message: text };
    }
    if (!res.ok) {
      const m = (parsed as { message?: unknown }).message;
      throw Object.assign(new Error(typeof m === 'string' ? m : `HTTP ${res.status}`), { status: res.status });
    }
    return parsed as T;
  }

  /** Opens the event stream and keeps it open until `close()`. */
  connect(onMessage: (m: GatewayMessage) => void, onState: (s: LinkState, why?: string) => void): void {
    if (this.stopped) return;
    const url = new URL(this.base.replace(/^http/, 'ws'));
    if (this.apiKey) url.searchParams.set('apiKey', this.apiKey);
    if (this.lastSeq !== undefined) url.searchParams.set('since', String(this.lastSeq));
    onState('connecting');
    const ws = new WebSocket(url);
    this.ws = ws;
    ws.on('open', () => {
      this.retry = 0;
      onState('connected');
    });
    ws.on('message', (raw) => {
      let m: GatewayMessage;
      try {
        m = JSON.parse(String(raw)) as GatewayMessage;
      } catch {
        return;
      }
      if (typeof m.seq === 'number') this.lastSeq = m.seq;
      onMessage(m);
    });
    const again = (why: string) => {
      if (this.ws !== ws) return;
      this.ws = undefined;
      if (this.stopped) return;
      onState('offline', why);
      const delay = Math.min(10_000, 500 * 2 ** this.retry++) * (0.75 + Math.random() * 0.5);
      this.timer = setTimeout(() => this.connect(onMessage, onState), delay);
    };
    ws.on('error', (e) => again(errorMessage(e)));
    ws.on('close', () => again('the connection closed'));
    ws.on('unexpected-response', (_req, res) => {
      again(res.statusCode === 401 ? 'the gateway refused the key (401): pass --api-key' : `HTTP ${res.statusCode}`);
      ws.terminate();
    });
  }

  /** Reconnect now (after starting the agent). */
  kick(onMessage: (m: GatewayMessage) => void, onState: (s: LinkState, why?: string) => void): void {
    if (this.ws) return;
    clearTimeout(this.timer);
    this.retry = 0;
    this.connect(onMessage, onState);
  }

  close(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.ws?.terminate();
    this.ws = undefined;
  }
}
