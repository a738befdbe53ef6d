/**
 * The running agent publishes its state in $KEEL_HOME/run/state.json (atomically, every few seconds and on
 * change), so `keel status` and `keel plugins` can report it without talking to the process.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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
}

export function stateFile(home: string): string {
  return join(home, 'run', 'state.json');
}

export function writeRunState(home: string, s: RunState): void {
  mkdirSync(join(home, 'run'), { recursive: true });
  const f = stateFile(home);
  const tmp = `${f}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(s, null, 2));
  renameSync(tmp, f);
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
