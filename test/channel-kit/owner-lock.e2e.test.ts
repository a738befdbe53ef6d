/**
 * The channel kit's owner lock against a real process: a lock held by a live pid is refused, one whose owner is
 * gone (kill -9) is taken over. (Moved out of kit.test.ts: a unit test starts no child process.)
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { OwnerLock } from '../../sdk/channel-kit/index.js';
import { rm, tmp } from '../helpers.js';

const homes: string[] = [];
afterEach(() => {
  for (const h of homes.splice(0)) rm(h);
});

describe('owner lock', () => {
  it('refuses while the owner lives, takes over a stale lock, releases only its own', async () => {
    const home = tmp('keel-lock-');
    homes.push(home);
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
    try {
      const lock = new OwnerLock(home, 'test', 'secret-token');
      expect(lock.file).not.toContain('secret-token');
      writeFileSync(lock.file, JSON.stringify({ pid: child.pid }));
      expect(lock.acquire()).toEqual({ ok: false, ownerPid: child.pid });
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      expect(lock.acquire()).toEqual({ ok: true });
      expect(new OwnerLock(home, 'test', 'another-token').acquire()).toEqual({ ok: true });
      lock.release();
      expect(lock.acquire()).toEqual({ ok: true });
    } finally {
      child.kill('SIGKILL');
    }
  });
});
