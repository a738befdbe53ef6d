/**
 * Consecutive failure counts and quarantines, kept in $KEEL_HOME/plugins-state.json so "repeatedly" spans
 * restarts. Written atomically.
 */
import { existsSync, readFileSync } from 'node:fs';
import { writeFileAtomicSync } from '../util/atomic-write.js';
import { join } from 'node:path';

interface StateShape {
  failures: Record<string, number>;
  quarantined: Record<string, { since: string; reason: string }>;
}

export class PluginStateFile {
  private data: StateShape;
  private readonly file: string;

  constructor(home: string) {
    this.file = join(home, 'plugins-state.json');
    this.data = { failures: {}, quarantined: {} };
    if (existsSync(this.file)) {
      try {
        const raw = JSON.parse(readFileSync(this.file, 'utf8')) as Partial<StateShape>;
        this.data = { failures: raw.failures ?? {}, quarantined: raw.quarantined ?? {} };
      } catch {
        // A damaged state file only loses failure counts; plugins start normally.
      }
    }
  }

  failures(id: string): number {
    return this.data.failures[id] ?? 0;
  }

  fail(id: string): number {
    const n = this.failures(id) + 1;
    this.data.failures[id] = n;
    this.save();
    return n;
  }

  reset(id: string): void {
    if (!(id in this.data.failures)) return;
    delete this.data.failures[id];
    this.save();
  }

  quarantine(id: string): { since: string; reason: string } | undefined {
    return this.data.quarantined[id];
  }

  quarantinedIds(): string[] {
    return Object.keys(this.data.quarantined);
  }

  setQuarantine(id: string, reason: string): void {
    this.data.quarantined[id] = { since: new Date().toISOString(), reason };
    this.save();
  }

  clearQuarantine(id: string): void {
    delete this.data.quarantined[id];
    delete this.data.failures[id];
    this.save();
  }

  private save(): void {
    writeFileAtomicSync(this.file, JSON.stringify(this.data, null, 2));
  }
}
