/**
 * The capabilities of the kernel and its core plugins (`agent`, `kernel:info`, `kernel:policy`, `memory`, `web`,
 * `knowledge`): types only, importing nothing but sdk/types.ts, so the capability map (sdk/capabilities.ts) names
 * them without importing the plugin contract (sdk/plugin.ts), which itself reads the map.
 */
import type { Action, Actor, Json, LogEntry, PolicyClass } from './types.js';

/** Capability `agent`: carries out an action. */
export interface AgentCapability {
  /** Whether the agent can take work now, and why not. */
  ready(): { ready: boolean; reason?: string };
  execute(action: Action, opts: { signal: AbortSignal }): Promise<{ result: string }>;
}

/**
 * Capability `kernel:info`, provided by the kernel itself: what a service plugin (the gateway, a dashboard)
 * reports about the running kernel.
 */
export interface KernelInfoCapability {
  version: string;
  home: string;
  /** ISO time this kernel started. */
  startedAt: string;
  /**
   * Whether an agent runner works on the queue: in this process, another `keel run` on the same home, or (a queue
   * shared through Redis) a runner holding a lease on any machine.
   */
  agentRunning(): boolean;
  /** This process's runner, if it runs one. */
  runner(): { state: string; reason?: string; current?: string } | undefined;
  /** Recent kernel log entries, newest last. */
  logs(opts?: { level?: 'info' | 'warn' | 'error'; limit?: number }): LogEntry[];
  /** Subscribe to new log entries. */
  onLog(listener: (e: LogEntry) => void): () => void;
  plugins(): Array<{ id: string; state: string; reason?: string; kind?: string }>;
  /** Lift a plugin's quarantine and try to start it again (what `keel plugins enable` does, live); undefined when unknown. */
  enablePlugin?(id: string): Promise<{ id: string; state: string; reason?: string } | undefined>;
  /** Every known configuration key with its owner, policy class and secret flag. */
  configKeys(): Array<{
    key: string;
    owner: string;
    policy: PolicyClass;
    secret: boolean;
    description?: string;
    /** The value's type in words ("an integer from 0 to 65535"). */
    type?: string;
    /** The default (never given for secrets). */
    default?: unknown;
    /** Which layer the effective value comes from. */
    source?: 'default' | 'file' | 'env' | 'override' | string;
  }>;
}

/**
 * Capability `kernel:policy`, provided by the kernel: the same admin and session decisions dispatch uses
 * (per-channel adminUsers, identityLinks, sessionScope; failing closed), so plugins need not re-derive them.
 */
export interface PolicyCapability {
  isAdmin(actor: Actor | undefined): boolean;
  sessionKey(actor: Actor): string;
}

/** A memory entry (SPEC "Memory entry"). */
export interface MemoryEntry {
  id: string;
  type: 'short' | 'episodic' | 'long';
  content: string;
  timestamp: string;
  metadata: { actionId?: string; step?: number; [k: string]: unknown };
}

/** Capability `memory`: what the gateway and the agent read from (and the agent records into) the memory plugin. */
export interface MemoryCapability {
  counts(): { short: number; episodic: number; long: number };
  list(opts: { type?: MemoryEntry['type']; limit: number; search?: string }): { memories: MemoryEntry[]; total: number };
  /** Record a step or observation of an action as short memory (content capped at 500 characters). */
  record?(entry: { content: string; actionId?: string; step?: number; actor?: Actor; channel?: string }): Promise<MemoryEntry>;
  /**
   * Context for the agent's prompt: the newest `memoryContextLimit` short memories, relevant episodic summaries
   * and profile facts the actor may see (non-admins never get journal, learning notes or other users' episodes).
   */
  context?(opts: { actor?: Actor; actionId?: string; task: string }): Promise<string>;
  /** Drop all memory (keel reset --memory). */
  reset?(): Promise<void>;
}

/** Capability `web`: fetching with the SSRF guard, shared by http_fetch, extract_article and rag_ingest_url. */
export interface WebCapability {
  fetch(
    url: string,
    opts?: { signal?: AbortSignal; maxBytes?: number; accept?: string },
  ): Promise<{ url: string; status: number; contentType: string; body: string; truncated: boolean }>;
  /** Main content of an HTML page. */
  extract(html: string, url: string): { title: string; text: string; byline?: string; excerpt?: string };
  /**
   * Resolves a host name (or takes an IP literal) and says why it must not be reached (`"127.0.0.1 is loopback"`),
   * or undefined when every address it resolves to is public. The same rule as the web plugin's fetches; it
   * honours webAllowPrivateNetwork (undefined for every host when it is true), so the browser and http_fetch share
   * one switch. A name that does not resolve is refused.
   */
  checkHost?(host: string): Promise<string | undefined>;
}

/**
 * Capability `knowledge`: adds documents to the knowledge store from another plugin (e.g. mail indexed by the
 * email plugin), with metadata the rag_* skills cannot pass. The same (collection, source) replaces a document.
 * @example
 * await ctx.use('knowledge')?.ingest({ content: body, source: 'email:<id@x>', collection: 'email',
 *   title: subject, metadata: { sender, subject, date } });
 */
export interface KnowledgeCapability {
  ingest(
    doc: {
      content: string;
      source: string;
      collection?: string;
      title?: string;
      tags?: string[];
      format?: 'text' | 'markdown' | 'csv' | 'json' | 'jsonl' | 'code';
      metadata?: Record<string, Json>;
    },
    opts?: { signal?: AbortSignal },
  ): Promise<{ documentId: string; chunks: number; replaced: boolean; embedded: boolean }>;
}
