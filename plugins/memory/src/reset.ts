/**
 * `keel reset --memory`: removes memory (memory.json and its journal, USER.md, LEARNING.md, JOURNAL.md, daily
 * logs, contact profiles). Keeps configuration, the queue and the knowledge store. Refuses while a Keel process
 * runs on this home (it holds memory in its own state and would write it back).
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline/promises';
import type { CommandContext } from '../../../sdk/index.js';
import { contactsDir } from './contacts.js';
import { dailyDir } from './daily.js';
import { markLongFilesChanged } from './long-files.js';

/** Remove the memory files; returns what was removed (paths relative to home). */
export function removeMemoryFiles(home: string, opts: { keepStore?: boolean } = {}): string[] {
  const removed: string[] = [];
  const names = [...(opts.keepStore ? [] : ['memory.json', 'memory.journal']), 'USER.md', 'LEARNING.md', 'JOURNAL.md'];
  if (existsSync(home)) {
    for (const f of readdirSync(home)) if (!opts.keepStore && /^memory\.(json|journal)\.(corrupt-\d+|tmp-\d+)$/.test(f)) names.push(f);
  }
  for (const n of names) {
    const p = join(home, n);
    if (existsSync(p)) {
      rmSync(p, { force: true });
      removed.push(n);
      markLongFilesChanged();
    }
  }
  for (const [dir, label] of [
    [dailyDir(home), 'daily'],
    [contactsDir(home), 'contacts'],
  ] as const) {
    if (!existsSync(dir)) continue;
    const count = readdirSync(dir).length;
    rmSync(dir, { recursive: true, force: true });
    removed.push(`${label}/ (${count} file${count === 1 ? '' : 's'})`);
  }
  return removed;
}

/** A live Keel process on this home, from its pid file in $KEEL_HOME/run/. */
export function runningKeel(home: string): { name: string; pid: number } | undefined {
  const dir = join(home, 'run');
  if (!existsSync(dir)) return undefined;
  for (const f of readdirSync(dir)) {
    if (!f.endsWith('.pid')) continue;
    try {
      const rec = JSON.parse(readFileSync(join(dir, f), 'utf8')) as { pid?: unknown; name?: unknown };
      const pid = Number(rec.pid);
      if (pid > 0 && pid !== process.pid && alive(pid)) return { name: String(rec.name ?? f.slice(0, -4)), pid };
    } catch {
      // An unreadable pid file says nothing about a live process.
    }
  }
  return undefined;
}

function alive(pid: number): boolean {
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
    return true;
  }
}

export async function resetCommand(c: CommandContext): Promise<number> {
  const o = c.options as { memory?: boolean; yes?: boolean };
  const out = (s: string): void => void process.stdout.write(`${s}\n`);
  const err = (s: string): void => void process.stderr.write(`keel: ${s}\n`);
  if (!o.memory) {
    err('say what to reset: `keel reset --memory [--yes]` clears memory (keeps config, queue and knowledge).');
    return 2;
  }
  const running = runningKeel(c.home);
  if (running) {
    err(`Keel is running on ${c.home} (${running.name}, pid ${running.pid}); stop it first with \`keel stop\`, then reset.`);
    return 1;
  }
  if (!o.yes) {
    if (!process.stdin.isTTY) {
      err('refusing to clear memory without confirmation: add --yes (no terminal to ask on).');
      return 2;
    }
    const rl = createInterface({ input: process.stdin, output: process.stdout });
    const answer = await rl.question(
      `Clear all memory in ${c.home} (short, episodic, USER.md, LEARNING.md, JOURNAL.md, daily logs, contacts)? [y/N] `,
    );
    rl.close();
    if (!/^y(es)?$/i.test(answer.trim())) {
      out('Nothing was removed.');
      return 1;
    }
  }
  const removed = removeMemoryFiles(c.home);
  out(
    removed.length
      ? `Memory cleared in ${c.home}. Removed: ${removed.join(', ')}.`
      : `Memory was already empty in ${c.home}; nothing to remove.`,
  );
  out('Configuration, the queue and the knowledge store were kept.');
  return 0;
}
