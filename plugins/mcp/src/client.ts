/**
 * One configured MCP server: connects (stdio child or streamable HTTP) with the official SDK's Client, lists its
 * tools, and when the connection dies restarts it with exponential backoff (clock and timers injected, so the
 * schedule is tested without waiting). The SDK is imported on the first connect only.
 */
import { errorsFor } from '../../../sdk/errors.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { errorMessage } from '../../../sdk/index.js';

const coded = errorsFor('mcp');

export interface ServerConfig {
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  url?: string;
  headers?: Record<string, string>;
  toolAllowList?: string[];
  toolDenyList?: string[];
  adminOnly?: boolean | string[];
  enabled?: boolean;
}

export interface McpTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean };
}

export type ServerState = 'connecting' | 'connected' | 'restarting' | 'failed' | 'disabled';

/** What `keel status`, `keel doctor` and the plugin's health say about a server. */
export interface ServerStatus {
  name: string;
  transport: 'stdio' | 'http';
  state: ServerState;
  tools: number;
  /** Failures in a row (the attempt the next restart will be). */
  attempt?: number;
  /** ISO time of the next restart, while restarting. */
  nextTryAt?: string;
  lastError?: string;
}

export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(t: unknown): void;
}

export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimeout: (t) => clearTimeout(t as NodeJS.Timeout),
};

export interface Backoff {
  delayMs: number;
  maxDelayMs: number;
  attempts: number;
}

/** Wait before restart number `attempt` (1-based): delay, 2×delay, 4×delay ... never more than maxDelayMs. */
export function backoffDelay(b: Backoff, attempt: number): number {
  return Math.min(b.maxDelayMs, b.delayMs * 2 ** Math.max(0, attempt - 1));
}

/** How long a connection must stay up for its failure count to start again from zero. */
const STABLE_MS = 60_000;

export interface ConnectionOptions {
  name: string;
  config: ServerConfig;
  backoff: () => Backoff;
  clock?: Clock;
  version: string;
  log: { info(m: string): void; warn(m: string): void };
  /** Called with the tools whenever they change (connected: the list; down: []). */
  onTools(tools: McpTool[]): void;
}

export class ServerConnection {
  private client: Client | undefined;
  private state: ServerState = 'connecting';
  private tools: McpTool[] = [];
  private failures = 0;
  private lastError: string | undefined;
  private timer: unknown;
  private nextTryAt: number | undefined;
  private connectedAt = 0;
  private stopped = false;
  private readonly clock: Clock;

  constructor(private readonly o: ConnectionOptions) {
    this.clock = o.clock ?? realClock;
  }

  get transport(): 'stdio' | 'http' {
    return this.o.config.url ? 'http' : 'stdio';
  }

  status(): ServerStatus {
    return {
      name: this.o.name,
      transport: this.transport,
      state: this.state,
      tools: this.tools.length,
      ...(this.failures ? { attempt: this.failures } : {}),
      ...(this.state === 'restarting' && this.nextTryAt ? { nextTryAt: new Date(this.nextTryAt).toISOString() } : {}),
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }

  start(): void {
    void this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    const c = this.client;
    this.client = undefined;
    await c?.close().catch(() => undefined);
  }

  /** The connected client, or an error saying why there is none. */
  connected(): Client {
    if (this.state === 'connected' && this.client) return this.client;
    throw coded('KEEL_E_PROVIDER_FAILED', `MCP server ${this.o.name} is not connected (${describe(this.status())})`);
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    this.state = this.failures ? 'restarting' : 'connecting';
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const client = new Client({ name: 'keel', version: this.o.version });
    let closedEarly = false;
    client.onclose = () => {
      if (this.client === client) this.down('the connection closed');
      else closedEarly = true;
    };
    client.onerror = (e) => {
      this.lastError = errorMessage(e);
    };
    try {
      await client.connect(await this.transportFor());
      if (closedEarly) throw coded('KEEL_E_PROVIDER_FAILED', this.lastError ?? 'the connection closed');
      const tools: McpTool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : {});
        for (const t of page.tools) tools.push(t as McpTool);
        cursor = page.nextCursor;
      } while (cursor);
      if (this.stopped) {
        await client.close().catch(() => undefined);
        return;
      }
      this.client = client;
      this.tools = tools;
      this.state = 'connected';
      this.connectedAt = this.clock.now();
      this.nextTryAt = undefined;
      this.o.log.info(`MCP server ${this.o.name} connected (${this.transport}): ${tools.length} tool(s)`);
      this.o.onTools(tools);
    } catch (e) {
      client.onclose = () => undefined;
      await client.close().catch(() => undefined);
      this.failed(errorMessage(e));
    }
  }

  private async transportFor() {
    const c = this.o.config;
    if (c.url) {
      const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
      return new StreamableHTTPClientTransport(new URL(c.url), { requestInit: { headers: { ...(c.headers ?? {}) } } });
    }
    const { StdioClientTransport, getDefaultEnvironment } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const t = new StdioClientTransport({
      command: c.command!,
      args: c.args ?? [],
      // The SDK's short list of safe variables (PATH, HOME ...) plus the server's own: never Keel's secrets.
      env: { ...getDefaultEnvironment(), ...(c.env ?? {}) },
      ...(c.cwd ? { cwd: c.cwd } : {}),
      stderr: 'pipe',
    });
    // The server's own complaints (its stderr) are the best error message when it dies.
    let tail = '';
    t.stderr?.on('data', (d: Buffer) => {
      tail = (tail + d.toString('utf8')).slice(-2000);
      const line = tail.trim().split('\n').pop();
      if (line) this.lastError = `${line.slice(0, 300)}`;
    });
    return t;
  }

  private down(why: string): void {
    if (this.stopped) return;
    this.client = undefined;
    this.tools = [];
    this.o.onTools([]);
    if (this.clock.now() - this.connectedAt >= STABLE_MS) this.failures = 0;
    this.failed(this.lastError ? `${why}: ${this.lastError}` : why);
  }

  private failed(why: string): void {
    if (this.stopped) return;
    this.failures++;
    this.lastError = why;
    const b = this.o.backoff();
    if (this.failures >= b.attempts) {
      this.state = 'failed';
      this.o.log.warn(`MCP server ${this.o.name} failed ${this.failures} times in a row, not retrying: ${why}`);
      return;
    }
    const wait = backoffDelay(b, this.failures);
    this.state = 'restarting';
    this.nextTryAt = this.clock.now() + wait;
    this.o.log.warn(`MCP server ${this.o.name} is down (${why}); restart ${this.failures} in ${Math.round(wait / 100) / 10} s`);
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      void this.connect();
    }, wait);
  }
}

/** One line for a server: `files connected, 3 tools` / `web restarting (attempt 2, next try in 4 s): ...`. */
export function describe(s: ServerStatus, now = Date.now()): string {
  if (s.state === 'connected') return `${s.name} connected (${s.transport}), ${s.tools} tool${s.tools === 1 ? '' : 's'}`;
  if (s.state === 'restarting') {
    const inS = s.nextTryAt ? Math.max(0, Math.ceil((Date.parse(s.nextTryAt) - now) / 1000)) : undefined;
    return `${s.name} restarting (attempt ${s.attempt ?? 1}${inS !== undefined ? `, next try in ${inS} s` : ''})${s.lastError ? `: ${s.lastError}` : ''}`;
  }
  if (s.state === 'failed') return `${s.name} failed${s.lastError ? `: ${s.lastError}` : ''}`;
  if (s.state === 'disabled') return `${s.name} disabled${s.lastError ? ` (${s.lastError})` : ''}`;
  return `${s.name} connecting`;
}
