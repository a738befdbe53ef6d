/**
 * Which version of a file is on disk, cheaply: its inode, modification time and size (an atomic rename gives a new
 * inode). A cache of a file that other processes also write re-reads it when the stamp changed.
 */
import { statSync } from 'node:fs';

/**
 * The file's version stamp, or 'none' when it is not there (no throw: a missing file is common and cheap this way).
 * @example if (fileStamp(file) !== this.stamp) this.reload();
 */
export function fileStamp(path: string): string {
  const s = statSync(path, { throwIfNoEntry: false });
  return s ? `${s.ino}:${s.mtimeMs}:${s.size}` : 'none';
}
