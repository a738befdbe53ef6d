/**
 * One temporary folder for the whole test run: every `tmpdir()` (test homes, plugin folders, servers' files) in
 * the workers and the processes they start falls under it, and it is removed when the run ends, so `npm test`
 * leaves nothing behind in the machine's temporary folder, even where a test fails before its own clean-up.
 * (Chromium's profiles live in short /tmp/kc-* folders of their own: test/chromium-server.ts removes them.)
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const before = process.env.TMPDIR;
  const dir = mkdtempSync(join(tmpdir(), 'keel-run-'));
  // Readable by the unprivileged servers the tests start (dovecot's auth process runs as its own user).
  chmodSync(dir, 0o755);
  process.env.TMPDIR = dir;
  return () => {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    } catch {
      // a process that outlived the run still writing there: the machine's temporary folder is cleaned anyway
    }
  };
}
