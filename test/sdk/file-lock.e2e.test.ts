/**
 * The lock file Keel's processes share (sdk/file-lock.ts): two processes that change one file under it lose
 * nothing; a lock left by a dead process is taken over; one held too long ends in a coded error naming the file.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireFileLock, withFileLock, withFileLockSync } from '../../sdk/file-lock.js';
import { rm, tmp } from '../helpers.js';

/** The pid of a process that has certainly exited. */
const deadPid = () => spawnSync(process.execPath, ['-e', '0']).pid!;

/**
 * Adds `n` to the counter in this process while a child keeps adding to it (it starts before and stops after this
 * process's additions, so the two always overlap); returns the final count and how many were added in all.
 */
async function race(file: string, n: number, locked: boolean): Promise<{ count: number; added: number }> {
  writeFileSync(file, JSON.stringify({ n: 0 }));
  rmSync(`${file}.stop`, { force: true });
  const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'lock-child.ts'), file, locked ? 'locked' : 'bare'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const said = (re: RegExp) =>
    new Promise<RegExpExecArray>((resolve) => {
      const look = () => {
        const m = re.exec(out);
        if (m) resolve(m);
      };
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        look();
      });
      look();
    });
  await said(/started/);
  const bump = () => {
    const v = JSON.parse(readFileSync(file, 'utf8')) as { n: number };
    writeFileSync(`${file}.parent.tmp`, JSON.stringify({ n: v.n + 1 }));
    renameSync(`${file}.parent.tmp`, file);
  };
  for (let i = 0; i < n; i++) {
    if (locked) withFileLockSync(`${file}.lock`, bump);
    else bump();
  }
  writeFileSync(`${file}.stop`, '');
  const childAdded = Number((await said(/added (\d+)/))[1]);
  return { count: (JSON.parse(readFileSync(file, 'utf8')) as { n: number }).n, added: n + childAdded };
}

describe('the lock file shared by processes', () => {
  let dir = '';
  afterEach(() => rm(dir));

  it('two processes changing one file under it lose no change (without it they do)', async () => {
    dir = tmp('keel-lock-');
    const file = join(dir, 'counter.json');
    const locked = await race(file, 2000, true);
    expect(locked.count).toBe(locked.added);
    // The same race without the lock loses changes, which is what the lock is for.
    const bare = await race(file, 2000, false);
    expect(bare.count).toBeLessThan(bare.added);
  }, 60_000);

  it('takes over a lock whose holder died, and times out on a live one with a coded error naming what it guards', async () => {
    dir = tmp('keel-lock-');
    const lock = join(dir, 'schedules.json.lock');
    writeFileSync(lock, `${deadPid()} abc\n`);
    expect(withFileLockSync(lock, () => 'ran')).toBe('ran');
    await expect(withFileLock(lock, async () => 'ran too')).resolves.toBe('ran too');

    // Left by an earlier process with this very pid (a container's pid 1 killed and started again): taken over.
    writeFileSync(lock, `${process.pid} left-by-my-predecessor\n`);
    expect(withFileLockSync(lock, () => 'ran after a restart')).toBe('ran after a restart');

    // Held by this process: a second taker waits, and gives up with the coded error.
    const held = await acquireFileLock(lock);
    const content = readFileSync(lock, 'utf8');
    expect(() => withFileLockSync(lock, () => 'never', { timeoutMs: 100, what: 'schedule list' })).toThrow(
      expect.objectContaining({
        code: 'KEEL_E_FILE_LOCKED',
        message: expect.stringContaining('The schedule list is locked by another process'),
      }),
    );
    await expect(withFileLock(lock, async () => 'never', { timeoutMs: 100, what: 'token usage summary' })).rejects.toMatchObject({
      code: 'KEEL_E_FILE_LOCKED',
    });
    expect(readFileSync(lock, 'utf8')).toBe(content);
    held.release();
    expect(existsSync(lock)).toBe(false);
  });
});
