/**
 * The default queue store: `actions.json` (the compacted base, replaced atomically) plus `actions.journal`
 * (append-only JSON lines) in KEEL_HOME.
 *
 * - Durability: an append resolves only after write + fdatasync. Appends that arrive while a flush is in flight
 *   share the next flush (group commit), which is what makes thousands of durable pushes per second possible.
 * - Several processes: every append and every compaction happens under the queue lock file. Only the owner (the
 *   runner) compacts while it is alive; others append, and everyone tails the journal to pick up others' ops.
 * - Recovery: a snapshot records which journal (and how far) it absorbed, so a crash between writing the
 *   snapshot and swapping the journal never applies an op twice; compaction keeps the previous snapshot and
 *   journal as `.bak` so a damaged snapshot can be rebuilt from them (see recovery.ts).
 */
import { constants, existsSync, type FSWatcher, mkdirSync, renameSync, statSync, watch } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import type { Logger } from '../../sdk/types.js';
import { ErrorCodes, errorMessage, KeelError } from '../errors.js';
import { copyFileAtomic, createJournal, cutTornTail, ensureHeader, type QueuePaths, queuePaths, writeFileAtomic } from './journal-file.js';
import { parseLines } from './journal-reader.js';
import { withLock } from './lock.js';
import { encodeOp, type QueueOp } from './ops.js';
import { claimOwner, isOwnerAlive, releaseOwner } from './owner.js';
import { journalOps, type RecoveryContext, recoverBeforeLive } from './recovery.js';
import { encodeSnapshot } from './snapshot-file.js';
import type { QueueSnapshot, QueueStore, StoreChange, StoreLoad } from './store.js';

export interface FileStoreOptions {
  home: string;
  /** The owner (the runner) takes actions and compacts. */
  owner: boolean;
  log: Logger;
  /** Read once and write nothing, not even a repair (`keel status`, `keel tasks`). */
  readOnly?: boolean;
  lockTimeoutMs?: number;
  /** Fallback poll of the journal for when fs.watch misses an event (default 200 ms). */
  pollMs?: number;
  /** Compact once the journal holds more ops than this and than the live actions (default 10,000)... */
  compactMinOps?: number;
  /** ...or more bytes than this and than the snapshot (default 64 MiB). */
  compactMinBytes?: number;
}

interface Batch {
  ops: QueueOp[];
  promise: Promise<void>;
  resolve: () => void;
  reject: (e: unknown) => void;
}

function newBatch(): Batch {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { ops: [], promise, resolve, reject };
}

const JOURNAL = 'actions.journal';
const APPEND_FLAGS = constants.O_RDWR | constants.O_APPEND;

export class FileStore implements QueueStore {
  readonly paths: QueuePaths;
  private readonly log: Logger;
  private handle: FileHandle | undefined;
  private ino = -1;
  private journalId = '';
  /** Bytes of the live journal already handed to the listener (everyone's ops up to here are in memory). */
  private offset = 0;
  private opsSinceBase = 0;
  private bytesSinceBase = 0;
  private baseBytes = 0;
  private needsRepair = false;
  private chain: Promise<unknown> = Promise.resolve();
  private batch: Batch | undefined;
  private onChange: (c: StoreChange) => void = () => {};
  private watcher: FSWatcher | undefined;
  private poller: NodeJS.Timeout | undefined;
  private tailTimer: NodeJS.Timeout | undefined;
  private tailQueued = false;
  private closed = false;

  constructor(private readonly o: FileStoreOptions) {
    this.paths = queuePaths(o.home);
    this.log = o.log;
  }

  /** Runs `fn` after everything queued before it: one journal operation at a time in this process. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => {});
    return run;
  }

  private locked<T>(fn: () => Promise<T> | T): Promise<T> {
    return withLock(this.paths.lock, fn, this.o.lockTimeoutMs === undefined ? {} : { timeoutMs: this.o.lockTimeoutMs });
  }

  /** A throwing listener must not leave a batch unresolved or stop the tail. */
  private listener(change: StoreChange): void {
    try {
      this.onChange(change);
    } catch (e) {
      this.log.error(`Queue: applying ops failed: ${errorMessage(e)}`);
    }
  }

  async load(onChange: (change: StoreChange) => void): Promise<StoreLoad> {
    if (!this.o.readOnly) mkdirSync(this.paths.home, { recursive: true });
    else if (!existsSync(this.paths.home)) return { snapshot: { actions: [], completed: [], failed: [] }, ops: [], problems: [] };
    this.onChange = onChange;
    const load = await this.serial(() =>
      this.locked(async () => {
        const claim = this.o.owner && !this.o.readOnly;
        if (claim) claimOwner(this.paths);
        try {
          return await this.loadLocked();
        } catch (e) {
          if (claim) releaseOwner(this.paths);
          throw e;
        }
      }),
    );
    if (!this.o.readOnly) this.startWatching();
    return load;
  }

  /** Reads base + journals and (re)opens the live journal. Caller holds the lock. */
  private async loadLocked(): Promise<StoreLoad> {
    const ctx: RecoveryContext = {
      paths: this.paths,
      log: this.log,
      repair: !this.o.readOnly && (this.o.owner || !isOwnerAlive(this.paths.home)),
      problems: [],
      needsRepair: false,
    };
    const { base, snapshot, ops } = recoverBeforeLive(ctx);
    await this.handle?.close();
    this.handle = undefined;
    // The live journal is read through the handle we keep, so nothing can slip in between reading and opening.
    try {
      this.handle = await open(this.paths.journal, this.o.readOnly ? 'r' : APPEND_FLAGS);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      if (!this.o.readOnly) {
        createJournal(this.paths);
        this.handle = await open(this.paths.journal, APPEND_FLAGS);
      }
    }
    if (this.handle) {
      if (!this.o.readOnly) ensureHeader(this.handle.fd);
      const buf = await this.readAll(this.handle);
      const live = journalOps(ctx, buf, JOURNAL, base);
      ops.push(...live.ops);
      this.ino = (await this.handle.stat()).ino;
      this.journalId = live.journalId;
      this.offset = live.end;
      this.opsSinceBase = live.ops.length;
      this.bytesSinceBase = buf.length;
    }
    this.baseBytes = existsSync(this.paths.snapshot) ? statSync(this.paths.snapshot).size : 0;
    this.needsRepair = ctx.needsRepair;
    if (this.o.readOnly) {
      await this.handle?.close();
      this.handle = undefined;
    }
    return { snapshot, ops, problems: ctx.problems };
  }

  private async readAll(h: FileHandle): Promise<Buffer> {
    const size = (await h.stat()).size;
    const buf = Buffer.alloc(size);
    let off = 0;
    while (off < size) {
      const { bytesRead } = await h.read(buf, off, size - off, off);
      if (bytesRead === 0) break;
      off += bytesRead;
    }
    return buf.subarray(0, off);
  }

  append(ops: QueueOp[]): Promise<void> {
    if (this.closed || this.o.readOnly) {
      return Promise.reject(
        new KeelError(ErrorCodes.QUEUE_CLOSED, 'The queue is closed (or opened read-only); open it again to change it.'),
      );
    }
    if (!this.batch) {
      const b = newBatch();
      this.batch = b;
      void this.serial(() => this.flush(b));
    }
    for (const op of ops) this.batch.ops.push(op);
    return this.batch.promise;
  }

  private async flush(b: Batch): Promise<void> {
    // From here on, new appends gather in the next batch, which flushes right after this one.
    if (this.batch === b) this.batch = undefined;
    try {
      const buf = Buffer.from(b.ops.map(encodeOp).join(''));
      await this.locked(async () => {
        await this.catchUpLocked();
        const h = this.handle!;
        try {
          let off = 0;
          while (off < buf.length) off += (await h.write(buf, off, buf.length - off)).bytesWritten;
          await h.datasync();
        } catch (e) {
          // Disk full or the like: take back whatever part got written, or it would later be read as acknowledged.
          await h.truncate(this.offset).catch(() => {});
          throw e;
        }
        this.offset += buf.length;
        this.opsSinceBase += b.ops.length;
        this.bytesSinceBase += buf.length;
      });
    } catch (e) {
      b.reject(e);
      return;
    }
    // Applied before anything queued after this flush (a compaction, say) runs, and before the callers resume.
    this.listener({ ops: b.ops });
    b.resolve();
  }

  /**
   * Brings memory up to the end of the journal before this process writes or compacts: reads what others
   * appended, and cuts a torn tail left by a writer that died. Caller holds the lock, so no write is in flight.
   */
  private async catchUpLocked(): Promise<void> {
    await this.followReplacedJournal();
    const size = await this.readNew();
    if (size > this.offset) {
      const cut = cutTornTail(this.handle!.fd);
      if (cut < size)
        this.log.warn(`Queue: cut ${size - cut} bytes of a write to actions.journal that a crash interrupted (never acknowledged).`);
      this.bytesSinceBase = cut;
    }
  }

  /** Hands complete lines past `offset` to the listener. Returns the file size seen. */
  private async readNew(): Promise<number> {
    const h = this.handle!;
    const size = (await h.stat()).size;
    if (size <= this.offset) return size;
    const buf = Buffer.alloc(size - this.offset);
    const { bytesRead } = await h.read(buf, 0, buf.length, this.offset);
    const p = parseLines(buf.subarray(0, bytesRead), this.offset, 0);
    this.offset = p.end;
    this.opsSinceBase += p.ops.length + p.bad.length;
    this.bytesSinceBase = Math.max(this.bytesSinceBase, p.end);
    const problems = p.bad.map(
      (b) =>
        `actions.journal has a corrupt line (${b.reason}); skipped. It stays in the journal until compaction, then in actions.journal.bak.`,
    );
    for (const m of problems) this.log.error(`Queue: ${m}`);
    if (problems.length) this.needsRepair = true;
    if (p.ops.length || problems.length) this.listener({ ops: p.ops, ...(problems.length ? { problems } : {}) });
    return p.end + p.partial;
  }

  /**
   * The path no longer names the file we hold. For a non-owner that means the owner compacted: reload it all.
   * For the owner it means someone deleted or replaced the journal: its memory is then the complete story, so it
   * adopts the file now at the path (keeping the ops in it durable where they are) and rewrites the base from
   * memory at the next chance. Caller holds the lock.
   */
  private async followReplacedJournal(): Promise<void> {
    let ino: number | undefined;
    try {
      ino = statSync(this.paths.journal).ino;
    } catch {
      ino = undefined;
    }
    if (ino === this.ino && this.handle) return;
    if (!this.o.owner) {
      const load = await this.loadLocked();
      this.listener({ reset: load.snapshot, ops: load.ops, problems: load.problems });
      return;
    }
    this.log.warn("Queue: actions.journal was replaced behind the runner's back; its ops are adopted and the queue will be rewritten.");
    if (this.handle) await this.readNew();
    await this.handle?.close();
    if (ino === undefined) createJournal(this.paths);
    this.handle = await open(this.paths.journal, APPEND_FLAGS);
    const ctx: RecoveryContext = { paths: this.paths, log: this.log, repair: true, problems: [], needsRepair: false };
    const p = journalOps(ctx, await this.readAll(this.handle), JOURNAL, undefined);
    this.ino = (await this.handle.stat()).ino;
    this.journalId = p.journalId;
    this.offset = p.end;
    if (p.ops.length || ctx.problems.length) this.listener({ ops: p.ops, problems: ctx.problems });
    this.needsRepair = true;
  }

  wantsCompaction(liveActions: number): boolean {
    if (this.closed || this.o.readOnly) return false;
    if (this.needsRepair) return true;
    return (
      this.opsSinceBase > Math.max(this.o.compactMinOps ?? 10_000, liveActions) ||
      this.bytesSinceBase > Math.max(this.o.compactMinBytes ?? 64 * 1024 * 1024, this.baseBytes)
    );
  }

  stale(): boolean {
    if (this.closed || this.o.readOnly) return false;
    return this.needsRepair || this.opsSinceBase > 0 || !existsSync(this.paths.snapshot);
  }

  compact(snapshot: () => QueueSnapshot): Promise<boolean> {
    if (this.closed || this.o.readOnly) return Promise.resolve(false);
    return this.serial(async () => {
      if (!this.o.owner && isOwnerAlive(this.paths.home)) return false;
      return this.locked(async () => {
        if (!this.o.owner && isOwnerAlive(this.paths.home)) return false;
        await this.catchUpLocked();
        const text = encodeSnapshot(snapshot(), this.journalId, this.offset);
        // Base first: if we crash before the journal swap, the base says how far it absorbed this journal.
        // With no current base (a damaged one was moved aside), the new base is the backup too, so that
        // actions.json.bak + actions.journal.bak always rebuild the state.
        const hadBase = existsSync(this.paths.snapshot);
        if (hadBase) copyFileAtomic(this.paths.snapshot, this.paths.snapshotBak);
        writeFileAtomic(this.paths.snapshot, this.paths.home, text);
        if (!hadBase) copyFileAtomic(this.paths.snapshot, this.paths.snapshotBak);
        // The absorbed journal becomes the backup by rename: no copy. Until the new journal is in place there is
        // no live one, which is harmless: appenders wait for our lock, and a crash here leaves a base that has
        // absorbed all of actions.journal.bak.
        renameSync(this.paths.journal, this.paths.journalBak);
        this.journalId = createJournal(this.paths);
        await this.handle?.close();
        this.handle = await open(this.paths.journal, APPEND_FLAGS);
        const st = await this.handle.stat();
        this.ino = st.ino;
        this.offset = st.size;
        this.opsSinceBase = 0;
        this.bytesSinceBase = st.size;
        this.baseBytes = Buffer.byteLength(text);
        this.needsRepair = false;
        return true;
      });
    });
  }

  private startWatching(): void {
    try {
      // The directory, not the file: compaction replaces the journal by rename.
      this.watcher = watch(this.paths.home, { persistent: false }, (_event, name) => {
        if (name === null || name === JOURNAL) this.scheduleTailSoon();
      });
      this.watcher.on('error', () => {
        this.watcher?.close();
        this.watcher = undefined;
      });
    } catch {
      // inotify limits and the like: the poll below still picks changes up.
    }
    this.poller = setInterval(() => this.scheduleTail(), this.o.pollMs ?? 200);
    this.poller.unref();
  }

  /** Our own appends fire the watcher too: coalescing a few milliseconds of events saves a read per write. */
  private scheduleTailSoon(): void {
    if (this.tailTimer || this.closed) return;
    this.tailTimer = setTimeout(() => {
      this.tailTimer = undefined;
      this.scheduleTail();
    }, 10);
    this.tailTimer.unref();
  }

  private scheduleTail(): void {
    if (this.tailQueued || this.closed) return;
    this.tailQueued = true;
    void this.serial(async () => {
      this.tailQueued = false;
      if (this.closed || !this.handle) return;
      try {
        let replaced: boolean;
        try {
          replaced = statSync(this.paths.journal).ino !== this.ino;
        } catch {
          replaced = true;
        }
        // Reading whole lines needs no lock; following a replaced journal does.
        if (replaced) await this.locked(() => this.catchUpLocked());
        else await this.readNew();
      } catch (e) {
        this.log.warn(`Queue: could not read the journal: ${errorMessage(e)}`);
      }
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.watcher?.close();
    this.watcher = undefined;
    if (this.poller) clearInterval(this.poller);
    if (this.tailTimer) clearTimeout(this.tailTimer);
    await this.serial(async () => {
      await this.handle?.close();
      this.handle = undefined;
    });
    if (this.o.owner && !this.o.readOnly) releaseOwner(this.paths);
  }
}
