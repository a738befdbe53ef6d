/**
 * The anonymous installation id: a random UUID made once and kept in $KEEL_HOME/installation-id. It says
 * nothing about the machine or the person; deleting the file makes a new one.
 */
import { randomUUID } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function installationId(home: string): string {
  const file = join(home, 'installation-id');
  const read = (): string | undefined => {
    try {
      const v = readFileSync(file, 'utf8').trim();
      return UUID.test(v) ? v : undefined;
    } catch {
      return undefined;
    }
  };
  const existing = read();
  if (existing) return existing;
  // Missing or damaged: replace it. 'wx' makes the first of two racing processes win.
  rmSync(file, { force: true });
  mkdirSync(home, { recursive: true });
  const id = randomUUID();
  try {
    const fd = openSync(file, 'wx', 0o600);
    try {
      writeSync(fd, `${id}\n`);
    } finally {
      closeSync(fd);
    }
    return id;
  } catch {
    return read() ?? id;
  }
}
