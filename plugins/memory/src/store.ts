/**
 * Short and episodic memory on disk: `memory.json` (snapshot) + `memory.journal` (write-ahead log).
 *
 * - Every change is one JSON line appended to the journal and fsynced before the caller is answered (changes
 *   that arrive during an fsync share the next one: group commit), so an acknowledged `record()` survives a
 *   crash at any moment. The in-memory state changes only after its line is durable.
 * - A snapshot replaces `memory.json` atomically (temp + fsync + rename) every COMPACT_AFTER journal lines and
 *   at stop; the journal is then emptied. Each line carries a sequence number and the snapshot the last one it
 *   holds, so a crash between the rename and the truncation replays nothing twice.
 * - A torn last journal line (a crash mid-append, never acknowledged) is ignored. A damaged snapshot or a
 *   damaged line inside the journal is reported and kept aside as `*.corrupt-<time>`, never silently dropped.
 * - Another Keel process on the same home (a background gateway) sees changes: reads re-load when the files
 *   changed under them. Only the agent's process writes in practice; two writers are not coordinated.
 */
import { errorsFor } from '../../../sdk/errors.js';
import {
  copyFileSync,
  existsSync,
  openSync,
  closeSync,
  fsyncSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
  mkdirSync,
  ftruncateSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import type { MemoryEntry } from '../../../sdk/index.js';
import { fileStamp } from '../../../sdk/file-stamp.js';
import { writeFileAtomicSync } from './atomic.js';

const coded = errorsFor('memory');

export type Op =
  | { seq: number; op: 'add'; entry: MemoryEntry }
  | { seq: number; op: 'consolidate'; add: MemoryEntry; remove: string[] }
  | { seq: number; op: 'remove'; ids: string[] };

type OpBody = Op extends infer O ? (O extends Op ? Omit<O, 'seq'> : never) : never;

export interface StoredVector {
  model: string;
  vec: Float32Array;
}

interface Snapshot {
  version: 1;
  seq: number;
  short: MemoryEntry[];
  episodic: MemoryEntry[];
  /** id -> { model, base64 of a unit-length Float32Array } (recomputable, so not journaled). */
  vectors?: Record<string, { model: string; b64: string }>;
}

const COMPACT_AFTER = 1000;
/** Quiet time after the last change before memory.json is brought up to date (debounced snapshot). */
export const QUIET_SNAPSHOT_MS = 1000;

export class MemoryStore {
  readonly file: string;
  readonly journalFile: string;
  short: MemoryEntry[] = [];
  episodic: MemoryEntry[] = [];
  vectors = new Map<string, StoredVector>();
  /** Bumped on every change of entries or vectors (caches key on it). */
  version = 0;
  /** Problems found while loading (reported by the plugin's log and health). */
  problems: string[] = [];
  private seq = 0;
  private fd: number | undefined;
  private linesSinceSnapshot = 0;
  private queue: Array<{ op: Op; resolve: () => void; reject: (e: unknown) => void }> = [];
  private writing = false;
  private idle: Promise<void> = Promise.resolve();
  private known = { snap: '', journal: 0 };
  private dirtyVectors = false;
  /** Quiet-time snapshot (0 turns it off): one timer, re-armed while changes keep coming. */
  quietMs = QUIET_SNAPSHOT_MS;
  private quietTimer: NodeJS.Timeout | undefined;
  private lastChangeAt = 0;
  /** Whether this process committed changes: only then does stop() write a snapshot (a reader never does). */
  private wrote = false;
  /** Called after a change from disk replaced the state (another process wrote). */
  onReload?: () => void;

  constructor(readonly home: string) {
    this.file = join(home, 'memory.json');
    this.journalFile = join(home, 'memory.journal');
  }

  /** Load snapshot + journal. */
  open(): void {
    mkdirSync(this.home, { recursive: true });
    this.load(true);
    this.fd = openSync(this.journalFile, 'a', 0o600);
    this.remember();
  }

  private load(report: boolean): void {
    const problems: string[] = [];
    let snap: Snapshot = { version: 1, seq: 0, short: [], episodic: [] };
    if (existsSync(this.file)) {
      try {
        const raw = JSON.parse(readFileSync(this.file, 'utf8')) as Snapshot;
        if (!raw || !Array.isArray(raw.short) || !Array.isArray(raw.episodic) || typeof raw.seq !== 'number')
          throw coded('KEEL_E_PLUGIN_FAILED', 'not a memory snapshot');
        snap = raw;
      } catch (e) {
        const aside = `${this.file}.corrupt-${Date.now()}`;
        if (report) renameSync(this.file, aside);
        problems.push(
          `memory.json could not be read (${(e as Error).message}); it was kept aside as ${aside} and memory starts from the journal.`,
        );
      }
    }
    const short = new Map(snap.short.map((e) => [e.id, e]));
    const episodic = new Map(snap.episodic.map((e) => [e.id, e]));
    let seq = snap.seq;
    let lines = 0;
    if (existsSync(this.journalFile)) {
      const text = readFileSync(this.journalFile, 'utf8');
      const parts = text.split('\n');
      const complete = parts.slice(0, -1); // the last piece is '' or a torn, never acknowledged line
      let damaged = false;
      for (const line of complete) {
        if (!line.trim()) continue;
        let op: Op;
        try {
          op = JSON.parse(line) as Op;
        } catch {
          damaged = true;
          continue;
        }
        lines++;
        if (typeof op.seq !== 'number' || op.seq <= snap.seq) continue;
        seq = Math.max(seq, op.seq);
        applyOp(op, short, episodic);
      }
      if (damaged) {
        const aside = `${this.journalFile}.corrupt-${Date.now()}`;
        if (report) copyFileSync(this.journalFile, aside);
        problems.push(`memory.journal holds damaged lines; they were skipped and the journal was copied to ${aside}.`);
      }
    }
    this.short = [...short.values()];
    this.episodic = [...episodic.values()];
    this.vectors.clear();
    for (const [id, v] of Object.entries(snap.vectors ?? {})) {
      const buf = Buffer.from(v.b64, 'base64');
      this.vectors.set(id, { model: v.model, vec: new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4).slice() });
    }
    this.seq = seq;
    this.version++;
    this.linesSinceSnapshot = lines;
    if (report) this.problems.push(...problems);
  }

  private stamp(): string {
    return fileStamp(this.file);
  }

  private journalSize(): number {
    return statSync(this.journalFile, { throwIfNoEntry: false })?.size ?? 0;
  }

  private remember(): void {
    this.known = { snap: this.stamp(), journal: this.journalSize() };
  }

  /** Re-load when another process changed the files (only when nothing of ours is in flight). */
  refresh(): void {
    if (this.writing || this.queue.length) return;
    if (this.stamp() === this.known.snap && this.journalSize() === this.known.journal) return;
    this.load(false);
    this.remember();
    this.onReload?.();
  }

  /** Make one change durable, then apply it. */
  commit(body: OpBody): Promise<void> {
    const op = { ...body, seq: ++this.seq } as Op;
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ op, resolve, reject });
      if (!this.writing) this.idle = this.drain();
    });
  }

  /** Resolves when every queued change is written. */
  flushed(): Promise<void> {
    return this.idle;
  }

  private async drain(): Promise<void> {
    this.writing = true;
    try {
      while (this.queue.length) {
        // Let changes made in the same tick join this write.
        await new Promise<void>((r) => setImmediate(r));
        const batch = this.queue.splice(0);
        try {
          if (this.fd === undefined) throw coded('KEEL_E_UNAVAILABLE', 'memory store is closed');
          const buf = Buffer.from(batch.map((b) => `${JSON.stringify(b.op)}\n`).join(''));
          let off = 0;
          while (off < buf.length) off += writeSync(this.fd, buf, off, buf.length - off);
          fsyncSync(this.fd);
          for (const b of batch) applyList(b.op, this);
          this.version++;
          this.wrote = true;
          this.linesSinceSnapshot += batch.length;
          // memory.json exists from the first change on; afterwards it follows after a quiet second.
          if (this.linesSinceSnapshot >= COMPACT_AFTER || !existsSync(this.file)) this.snapshot();
          else this.noteChange();
          this.remember();
          for (const b of batch) b.resolve();
        } catch (e) {
          for (const b of batch) b.reject(e);
        }
      }
    } finally {
      this.writing = false;
    }
  }

  /** Arms the quiet-time snapshot: a clock read per change, a file write only once changes stop for quietMs. */
  private noteChange(): void {
    if (this.quietMs <= 0) return;
    this.lastChangeAt = performance.now();
    if (this.quietTimer) return;
    const arm = (ms: number) => {
      this.quietTimer = setTimeout(() => {
        this.quietTimer = undefined;
        if (this.fd === undefined) return;
        const since = performance.now() - this.lastChangeAt;
        if (since < this.quietMs || this.writing || this.queue.length) return arm(Math.max(1, this.quietMs - since));
        if (this.linesSinceSnapshot === 0 && !this.dirtyVectors) return;
        try {
          this.snapshot();
        } catch {
          // The journal still holds everything; the next quiet second or the stop tries again.
        }
      }, ms);
      this.quietTimer.unref();
    };
    arm(this.quietMs);
  }

  /** Replace memory.json with the whole state and empty the journal. */
  snapshot(): void {
    const vectors: Snapshot['vectors'] = {};
    const live = new Set([...this.short, ...this.episodic].map((e) => e.id));
    for (const [id, v] of this.vectors) {
      if (live.has(id))
        vectors[id] = { model: v.model, b64: Buffer.from(v.vec.buffer, v.vec.byteOffset, v.vec.byteLength).toString('base64') };
    }
    const snap: Snapshot = { version: 1, seq: this.seq, short: this.short, episodic: this.episodic, vectors };
    writeFileAtomicSync(this.file, JSON.stringify(snap));
    if (this.fd !== undefined) {
      ftruncateSync(this.fd, 0);
      fsyncSync(this.fd);
    } else {
      writeFileSync(this.journalFile, '');
    }
    this.linesSinceSnapshot = 0;
    this.dirtyVectors = false;
    this.remember();
  }

  setVector(id: string, v: StoredVector): void {
    this.vectors.set(id, v);
    this.dirtyVectors = true;
    this.version++;
    // A process that writes memory also keeps the vectors it made (the next quiet-time snapshot holds them), so a
    // crash does not cost a second embedding of everything; a reader leaves memory.json to the writer.
    if (this.wrote) this.noteChange();
  }

  async close(): Promise<void> {
    await this.idle;
    if (this.quietTimer) clearTimeout(this.quietTimer);
    this.quietTimer = undefined;
    if (this.fd === undefined) return;
    if (this.wrote && (this.linesSinceSnapshot > 0 || this.dirtyVectors)) {
      try {
        this.snapshot();
      } catch {
        // The journal still holds everything.
      }
    }
    closeSync(this.fd);
    this.fd = undefined;
  }

  /** Forget everything (keel reset --memory through the capability). */
  async clear(): Promise<void> {
    await this.idle;
    this.short = [];
    this.episodic = [];
    this.vectors.clear();
    this.version++;
    this.snapshot();
  }
}

function applyOp(op: Op, short: Map<string, MemoryEntry>, episodic: Map<string, MemoryEntry>): void {
  if (op.op === 'add') (op.entry.type === 'episodic' ? episodic : short).set(op.entry.id, op.entry);
  else if (op.op === 'consolidate') {
    for (const id of op.remove) short.delete(id) || episodic.delete(id);
    episodic.set(op.add.id, op.add);
  } else if (op.op === 'remove') for (const id of op.ids) short.delete(id) || episodic.delete(id);
}

function applyList(op: Op, s: MemoryStore): void {
  const drop = (ids: string[]): void => {
    const set = new Set(ids);
    s.short = s.short.filter((e) => !set.has(e.id));
    s.episodic = s.episodic.filter((e) => !set.has(e.id));
    for (const id of ids) s.vectors.delete(id);
  };
  if (op.op === 'add') (op.entry.type === 'episodic' ? s.episodic : s.short).push(op.entry);
  else if (op.op === 'consolidate') {
    drop(op.remove);
    s.episodic.push(op.add);
  } else drop(op.ids);
}
