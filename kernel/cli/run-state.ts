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
