/**
 * Replace a file so that a crash at any moment leaves either the old content or the new, never
 * half of each: write a temporary file beside it, fsync, rename over, fsync the directory.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, open, realpath, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** Follows a symlinked target (dotfile managers) so the link survives and the real file is replaced. */
async function resolveTarget(path: string): Promise<string> {
  try {
    return await realpath(path);
  } catch {
    return path;
  }
}

export async function writeFileAtomic(path: string, data: string, mode = 0o600): Promise<void> {
  const target = await resolveTarget(path);
  const dir = dirname(target);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = join(dir, `.${basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const fh = await open(tmp, 'wx', mode);
  try {
    await fh.writeFile(data, 'utf8');
    // The umask may have narrowed the mode on open; it can never have widened it, but say it outright.
    await fh.chmod(mode);
    await fh.sync();
  } catch (e) {
    await fh.close().catch(() => {});
    await rm(tmp, { force: true });
    throw e;
  }
  await fh.close();
  try {
    await rename(tmp, target);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
  await syncDir(dir);
}

/** Make the rename itself durable. Some platforms refuse to open a directory: best effort there. */
async function syncDir(dir: string): Promise<void> {
  let fh;
  try {
    fh = await open(dir, 'r');
    await fh.sync();
  } catch {
    // Not supported here (Windows); the rename is still atomic, only its durability is weaker.
  } finally {
    await fh?.close().catch(() => {});
  }
}
