/**
 * The dashboard's link to the gateway: REST with the key from session storage (never in a URL), and the
 * WebSocket that resumes from the last seq after a drop (docs/websocket.md "Resuming").
 */
const KEY_STORAGE = 'keel.apiKey';

export function apiKey(): string | null {
  return sessionStorage.getItem(KEY_STORAGE);
}
export function setApiKey(key: string | null): void {
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else sessionStorage.removeItem(KEY_STORAGE);
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A JSON request to /api; errors become ApiError with the gateway's message. */
export async function api<T = any>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const headers: Record<string, string> = {};
  const key = apiKey();
  if (key) headers['x-api-key'] = key;
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, {
    method: init.method ?? 'GET',
    headers,
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  let data: any;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = { message: text };
  }
  if (!res.ok) throw new ApiError(res.status, data?.message ?? `HTTP ${res.status}`);
  return data as T;
}

/** Runs a skill and returns its result text (throws on failure). */
export async function runSkill(name: string, parameters: Record<string, unknown>): Promise<string> {
  const r = await api<{ success: boolean; result: string }>(`/api/skills/${encodeURIComponent(name)}/execute`, {
    method: 'POST',
    body: { parameters },
  });
  if (!r.success) throw new ApiError(200, r.result);
  return r.result;
}

export interface StreamMsg {
  type: string;
  seq?: number;
  event?: string;
  data?: any;
  [k: string]: any;
}

type Listener = (m: StreamMsg) => void;

/**
 * One WebSocket for the whole page. Reconnects by itself with backoff and `?since=<last seq>`; a `gap` tells the
 * pages to refetch (they listen for it).
 */
export class Stream {
  private ws: WebSocket | null = null;
  private last: number | null = null;
  private listeners = new Set<Listener>();
  private retry = 0;
  private pending = new Map<string, (m: StreamMsg) => void>();
  private n = 0;
  state: 'connecting' | 'open' | 'closed' = 'connecting';
  onState: ((s: Stream['state']) => void) | null = null;

  connect(): void {
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const url = `${proto}//${location.host}/ws${this.last !== null ? `?since=${this.last}` : ''}`;
    const key = apiKey();
    const protocols = ['keel.v1', ...(key ? [`keel-key.${b64url(key)}`] : [])];
    const ws = new WebSocket(url, protocols);
    this.ws = ws;
    this.setState('connecting');
    ws.onopen = () => {
      this.retry = 0;
      this.setState('open');
    };
    ws.onmessage = (ev) => {
      let m: StreamMsg;
      try {
        m = JSON.parse(String(ev.data));
      } catch {
        return;
      }
      if (typeof m.seq === 'number' && (m.type === 'event' || m.type === 'status' || m.type === 'gap'))
        this.last = m.type === 'gap' ? m.seq : Math.max(this.last ?? 0, m.seq);
      if (m.type === 'reply' && typeof m.id === 'string') {
        const done = this.pending.get(m.id);
        this.pending.delete(m.id);
        done?.(m);
      }
      for (const l of this.listeners) l(m);
    };
    ws.onclose = () => {
      this.setState('closed');
      const delay = Math.min(10_000, 300 * 2 ** this.retry++);
      setTimeout(() => this.connect(), delay);
    };
  }

  private setState(s: Stream['state']): void {
    this.state = s;
    this.onState?.(s);
  }

  subscribe(l: Listener): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  /** Sends a client action and resolves with its reply. */
  request(action: string, data: unknown): Promise<StreamMsg> {
    const id = `d${++this.n}`;
    return new Promise((resolve, reject) => {
      if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return reject(new Error('not connected; retrying'));
      this.pending.set(id, resolve);
      this.ws.send(JSON.stringify({ action, id, data }));
    });
  }
}

function b64url(s: string): string {
  const bytes = new TextEncoder().encode(s);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export const stream = new Stream();
