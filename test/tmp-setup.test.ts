import { existsSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import setup from './tmp-setup.js';

describe('the run’s temporary folder (test/tmp-setup.ts)', () => {
  it('this run’s tmpdir() is a keel-run-* folder of its own', () => {
    expect(basename(tmpdir())).toMatch(/^keel-run-/);
  });

  it('points TMPDIR at a new folder and, at the end, removes it with what was left there and restores TMPDIR', () => {
    const before = process.env.TMPDIR;
    const teardown = setup();
    try {
      const dir = process.env.TMPDIR!;
      expect(dir).not.toBe(before);
      expect(basename(dir)).toMatch(/^keel-run-/);
      expect(dirname(dir)).toBe(before ?? dirname(dir));
      expect(tmpdir()).toBe(dir);
      expect(statSync(dir).mode & 0o777).toBe(0o755); // dovecot's auth process, its own user, reads under it
      writeFileSync(join(dir, 'left-behind'), 'x');
      teardown();
      expect(existsSync(dir)).toBe(false);
      expect(process.env.TMPDIR).toBe(before);
    } finally {
      if (process.env.TMPDIR !== before) process.env.TMPDIR = before;
    }
  });
});
