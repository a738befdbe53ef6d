/**
 * Consecutive failure counts and quarantines, kept in $KEEL_HOME/plugins-state.json so "repeatedly" spans
 * restarts. Written atomically.
 *
 * Several processes share the file (the agent, a separate `keel gateway`, `keel plugins enable`), so nothing here
 * trusts a copy read earlier: every change re-reads the file, changes the one entry and writes it back at once (no
 * await in between), and every read re-reads it when it changed on disk. A process that started before an enable
 * therefore never writes the quarantine back, and one that quarantines a plugin never erases another's change.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileStamp } from '../../sdk/file-stamp.js';
import { writeFileAtomicSync } from '../util/atomic-write.js';

interface StateShape {
  failures: Record<string, number>;
  quarantined: Record<string, { since: string; reason: string }>;
}

export class PluginStateFile {
  private readonly file: string;
  /** The file as last read, and what identified that version on disk (inode, mtime, size). */
  private cached: { stamp: string; data: StateShape } | undefined;

  constructor(home: string) {
    this.file = join(home, 'plugins-state.json');
  }

  failures(id: string): number {
    return this.current().failures[id] ?? 0;
  }

  fail(id: string): number {
    let n = 0;
    this.change((d) => {
      n = (d.failures[id] ?? 0) + 1;
      d.failures[id] = n;
    });
    return n;
  }

  reset(id: string): void {
    if (!(id in this.current().failures)) return;
    this.change((d) => {
      delete d.failures[id];
    });
  }

  quarantine(id: string): { since: string; reason: string } | undefined {
    return this.current().quarantined[id];
  }

  quarantinedIds(): string[] {
    return Object.keys(this.current().quarantined);
  }

  setQuarantine(id: string, reason: string): void {
    this.change((d) => {
      d.quarantined[id] = { since: new Date().toISOString(), reason };
    });
  }

  clearQuarantine(id: string): void {
    this.change((d) => {
      delete d.quarantined[id];
      delete d.failures[id];
    });
  }

  /** The file's content, read again only when it changed on disk since the last read. */
  private current(): StateShape {
    const stamp = this.stamp();
    if (this.cached?.stamp !== stamp) this.cached = { stamp, data: this.read() };
    return this.cached.data;
  }

  /** Reads the file as it is now, applies `fn`, writes it (synchronously: nothing else runs in between here). */
  private change(fn: (d: StateShape) => void): void {
    const data = this.read();
    fn(data);
    writeFileAtomicSync(this.file, JSON.stringify(data, null, 2));
    this.cached = { stamp: this.stamp(), data };
  }

  private stamp(): string {
    return fileStamp(this.file);
  }

  private read(): StateShape {
    if (!existsSync(this.file)) return { failures: {}, quarantined: {} };
    try {
      const raw = JSON.parse(readFileSync(this.file, 'utf8')) as Partial<StateShape>;
      return { failures: raw.failures ?? {}, quarantined: raw.quarantined ?? {} };
    } catch {
      // A damaged state file only loses failure counts; plugins start normally.
      return { failures: {}, quarantined: {} };
    }
  }
}
