/**
 * Every long-running Keel process (agent runner, background gateway, ...) leaves a pid file in $KEEL_HOME/run/,
 * so `keel status` can see and `keel stop` can stop all of them. A pid is trusted only while that process is
 * alive and its command line is Keel's (a reused pid is never signalled).
 */
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { writeFileAtomicSync } from './atomic-write.js';
import { isPidAlive } from './pid.js';
import { join } from 'node:path';

export interface PidRecord {
  pid: number;
  name: string;
  mode: 'foreground' | 'daemon' | 'background';
  startedAt: string;
  version: string;
  /** Log file, for detached processes. */
  log?: string;
  /** False while the process is still starting (its kernel and servers are not up yet). */
  ready?: boolean;
  /** Where this process's gateway listens (`http://host:port`), when it runs one. */
  gateway?: string;
}

export function runDir(home: string): string {
  return join(home, 'run');
}

export { isPidAlive as isAlive };

function looksLikeKeel(pid: number): boolean {
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return /keel|cli\.js|main\.ts/.test(cmd);
  } catch {
    return true;
  }
}

export function writePid(home: string, rec: PidRecord): string {
  const file = join(runDir(home), `${rec.name}.pid`);
  writeFileAtomicSync(file, JSON.stringify(rec));
  return file;
}

export function removePid(home: string, name: string, pid = process.pid): void {
  const rec = readPid(home, name);
  if (rec && rec.pid === pid) rmSync(join(runDir(home), `${name}.pid`), { force: true });
}

export function readPid(home: string, name: string): PidRecord | undefined {
  const file = join(runDir(home), `${name}.pid`);
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as PidRecord;
  } catch {
    return undefined;
  }
}

/** Live Keel processes; stale pid files are removed. */
export function livePids(home: string): PidRecord[] {
  const dir = runDir(home);
  if (!existsSync(dir)) return [];
  const out: PidRecord[] = [];
  for (const f of readdirSync(dir)) {
    if (!f.endsWith('.pid')) continue;
    const rec = readPid(home, f.slice(0, -4));
    if (rec && isPidAlive(rec.pid) && looksLikeKeel(rec.pid)) out.push(rec);
    else rmSync(join(dir, f), { force: true });
  }
  return out;
}
