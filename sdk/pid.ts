import { readFileSync } from 'node:fs';

/**
 * True when a process with this pid is running (EPERM means it exists but belongs to someone else). A zombie
 * counts as dead: in a container whose init does not reap orphans, a killed process can stay a zombie for good.
 */
export function isPidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return true; // no /proc (not Linux): signal 0 is all we can know
  }
}
