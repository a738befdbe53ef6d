/**
 * Daily logs: `$KEEL_HOME/daily/YYYY-MM-DD.md` (the machine's local date), append-only, one line per event:
 * `- HH:MM:SSZ [kind] [channel] text`. They are a human-readable trail, not the source of truth (memory.json is),
 * so lines are appended without fsync; an append never rewrites earlier lines.
 */
import { appendFile, mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { localDate } from './long-files.js';

export function dailyDir(home: string): string {
  return join(home, 'daily');
}

let chain: Promise<unknown> = Promise.resolve();

export function appendDaily(home: string, kind: string, channel: string, text: string, at = new Date()): Promise<void> {
  const file = join(dailyDir(home), `${localDate(at)}.md`);
  const line = `- ${at.toISOString().slice(11, 19)}Z [${kind}] [${channel}] ${text.replace(/\s*\n\s*/g, ' ').trim()}\n`;
  const next = chain.then(async () => {
    await mkdir(dailyDir(home), { recursive: true });
    const head = existsSync(file) ? '' : `# Daily log ${localDate(at)}\n\n`;
    await appendFile(file, head + line, { mode: 0o600 });
  });
  chain = next.catch(() => undefined);
  return next;
}
