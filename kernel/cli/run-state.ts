/**
 * The running agent publishes its state in $KEEL_HOME/run/state.json (atomically, every few seconds and on
 * change), so `keel status` and `keel plugins` can report it without talking to the process.
 */
import { existsSync, readFileSync } from 'node:fs';
import { writeFileAtomicSync } from '../util/atomic-write.js';
import { join } from 'node:path';
import type { ChannelListing } from '../../sdk/channel.js';
import type { PluginStatus } from '../plugins/host.js';
import type { RunnerStatus } from '../runner/runner.js';

export interface RunState {
  pid: number;
  version: string;
  startedAt: string;
  updatedAt: string;
  runner: RunnerStatus;
  queue: { pending: number; completed: number; failed: number };
  plugins: PluginStatus[];
  skills: Array<{ name: string; plugin: string; category: string; description: string }>;
  /** Running channels (providers of `channel:<name>`) with their status; absent in files of older versions. */
  channels?: ChannelListing[];
  /** MCP servers Keel is a client of (capability `mcp:servers` of the mcp plugin), with their state. */
  mcpServers?: McpServerState[];
}

/** One MCP server as `keel status` shows it (plugins/mcp/src/client.ts ServerStatus). */
export interface McpServerState {
  name: string;
  transport: 'stdio' | 'http';
  state: 'connecting' | 'connected' | 'restarting' | 'failed' | 'disabled';
  tools: number;
  attempt?: number;
  nextTryAt?: string;
  lastError?: string;
}

/**
 * @example mcpLine({ name: 'files', transport: 'stdio', state: 'restarting', tools: 0, attempt: 2, lastError: 'exited' }, now)
 * // 'files restarting (attempt 2): exited'
 */
export function mcpLine(s: McpServerState, now = Date.now()): string {
  const why = s.lastError ? `: ${s.lastError}` : '';
  if (s.state === 'connected') return `${s.name} connected (${s.transport}), ${s.tools} tool${s.tools === 1 ? '' : 's'}`;
  if (s.state === 'restarting') {
    const inS = s.nextTryAt ? Math.max(0, Math.ceil((Date.parse(s.nextTryAt) - now) / 1000)) : undefined;
    return `${s.name} restarting (attempt ${s.attempt ?? 1}${inS !== undefined ? `, next try in ${inS} s` : ''})${why}`;
  }
  if (s.state === 'disabled') return `${s.name} off${s.lastError ? ` (${s.lastError})` : ''}`;
  return `${s.name} ${s.state}${why}`;
}

export function stateFile(home: string): string {
  return join(home, 'run', 'state.json');
}

export function writeRunState(home: string, s: RunState): void {
  writeFileAtomicSync(stateFile(home), JSON.stringify(s, null, 2));
}

export function readRunState(home: string): RunState | undefined {
  const f = stateFile(home);
  if (!existsSync(f)) return undefined;
  try {
    return JSON.parse(readFileSync(f, 'utf8')) as RunState;
  } catch {
    return undefined;
  }
}
