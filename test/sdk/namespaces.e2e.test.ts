/**
 * namespaceSupport: the real probe on this machine (with a namespace actually entered), and what a system that
 * refuses namespaces looks like (a stand-in `unshare` that fails as util-linux does in a container).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { namespaceSupport } from '../../sdk/namespaces.js';
import { rm, tmp } from '../helpers.js';

describe('namespaceSupport', () => {
  it('gives a prefix that really enters the namespaces, or a reason', async () => {
    const ns = await namespaceSupport(['mount', 'pid']);
    if (!ns.available) {
      expect(ns.reason.length).toBeGreaterThan(0);
      return;
    }
    expect(ns.prefix).toEqual(expect.arrayContaining(['--mount', '--pid', '--mount-proc']));
    // Inside, /proc is the new pid namespace's: the shell is pid 1.
    const [cmd, ...args] = [...ns.prefix, 'sh', '-c', 'echo $$'];
    expect(execFileSync(cmd!, args, { encoding: 'utf8' }).trim()).toBe('1');
    expect(await namespaceSupport(['pid', 'mount'])).toBe(ns); // probed once
  });

  it('says why, when unshare is refused everywhere or missing', async () => {
    const dir = tmp('keel-ns-');
    try {
      const fake = join(dir, 'unshare');
      writeFileSync(fake, '#!/bin/sh\necho "unshare: unshare failed: Operation not permitted" >&2\nexit 1\n');
      chmodSync(fake, 0o755);
      const no = await namespaceSupport(['net'], { unshare: fake });
      expect(no).toEqual({
        available: false,
        reason: expect.stringMatching(/Operation not permitted.*user namespace.*Operation not permitted/),
      });
      const missing = await namespaceSupport(['net'], { unshare: join(dir, 'nope') });
      expect(missing).toEqual({ available: false, reason: expect.stringContaining('is not installed') });
    } finally {
      rm(dir);
    }
  });
});
