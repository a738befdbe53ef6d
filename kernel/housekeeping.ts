/**
 * Housekeeping in the agent's process, so that a Keel left running for months on a server does not fill its disk
 * (docs/housekeeping.md):
 * - files under `$KEEL_HOME/downloads` not written for `downloadsKeepDays` are removed (then empty folders below
 *   it), at start and daily; symbolic links are never followed;
 * - the log file this process writes to when it runs detached (`KEEL_LOG_FILE`, set by `detach`) is copied to
 *   `<name>.1` and emptied once it passes `logFileMaxMB` (checked every few minutes: the file is this process's
 *   stdout and stderr, opened for appending, so emptying it in place is safe).
 * The channels prune their own stores (the channel kit's pruneDaily, `channelHistoryKeepDays`); the token usage log rotates as
 * it is written (plugins/agent/src/usage.ts).
 */
import { copyFileSync, readFileSync, statSync, truncateSync } from 'node:fs';
import { lstat, opendir, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../sdk/errors.js';
import type { Logger } from '../sdk/index.js';

const DAY_MS = 24 * 3600 * 1000;
/** How often the log file's size is looked at. */
const LOG_CHECK_MS = 5 * 60 * 1000;

export interface HousekeepingOptions {
  home: string;
  config: { get(key: string): unknown };
  log: Logger;
  /** Sweep `downloads/` (the agent's process; one per home). */
  downloads: boolean;
  /** The log file this process's stdout and stderr go to (detached processes). */
  logFile?: string;
  now?: () => number;
}

export interface SweepResult {
  files: number;
  bytes: number;
  folders: number;
}

/** Removes files under `root` last written before `before` (ms), then the folders below `root` left empty. */
export async function sweepFolder(root: string, before: number): Promise<SweepResult> {
  const out: SweepResult = { files: 0, bytes: 0, folders: 0 };
  const walk = async (dir: string, top: boolean): Promise<boolean> => {
    let empty = true;
    let entries: Awaited<ReturnType<typeof opendir>>;
    try {
      entries = await opendir(dir);
    } catch {
      return false; // gone, or not readable: leave it
    }
    for await (const e of entries) {
      const path = join(dir, e.name);
      if (e.isDirectory()) {
        if (!(await walk(path, false))) empty = false;
        continue;
      }
      // files and symbolic links by their own time (a link is removed, never what it points to)
      try {
        const st = await lstat(path);
        if (st.mtimeMs < before) {
          await unlink(path);
          out.files++;
          out.bytes += st.isFile() ? st.size : 0;
          continue;
        }
      } catch {
        // removed meanwhile, or not ours to remove
      }
      empty = false;
    }
    if (empty && !top) {
      try {
        await rmdir(dir);
        out.folders++;
        return true;
      } catch {
        return false; // something was written into it meanwhile
      }
    }
    return empty;
  };
  await walk(root, true);
  return out;
}

/** Copies `file` to `<file>.1` and empties it when it is larger than `maxBytes`; true when it did. */
export function rotateInPlace(file: string, maxBytes: number): boolean {
  if (maxBytes <= 0) return false;
  let size: number;
  try {
    size = statSync(file).size;
  } catch {
    return false;
  }
  if (size <= maxBytes) return false;
  copyFileSync(file, `${file}.1`);
  truncateSync(file, 0);
  return true;
}

/**
 * logFileMaxMB as bytes before the configuration is loaded (a detached process rotates what earlier runs left before
 * it writes its first line): the environment, else the config file (parsed only when it names the key), else 10 MB.
 */
export async function logLimitBeforeStart(home: string, configFile?: string, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let mb: unknown = env.KEEL_LOG_FILE_MAX_MB;
  if (mb === undefined) {
    try {
      const text = readFileSync(configFile ?? join(home, 'keel.config.yaml'), 'utf8');
      if (/\blogFileMaxMB\b/.test(text)) {
        const { parse } = await import('yaml');
        mb = (parse(text) as Record<string, unknown> | null)?.logFileMaxMB;
      }
    } catch {
      // no file, or not valid YAML: the kernel says so once it loads it
    }
  }
  const n = Number(mb ?? 10);
  return Number.isFinite(n) && n >= 0 ? n * 1048576 : 10 * 1048576;
}

export class Housekeeping {
  private timers: NodeJS.Timeout[] = [];
  private running: Promise<unknown> | undefined;

  constructor(private readonly o: HousekeepingOptions) {}

  start(): void {
    if (this.o.downloads) {
      // The first sweep waits a little: start-up has better things to do with the disk.
      this.timers.push(
        setTimeout(() => void this.sweepDownloads(), 10_000),
        setInterval(() => void this.sweepDownloads(), DAY_MS),
      );
    }
    // What earlier runs left was rotated before this process wrote its first line (kernel/cli/serve.ts).
    if (this.o.logFile) this.timers.push(setInterval(() => this.rotateLog(), LOG_CHECK_MS));
    for (const t of this.timers) t.unref();
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers = [];
    await this.running;
  }

  /** Removes downloads older than `downloadsKeepDays` (0: none); logs what it removed. */
  sweepDownloads(): Promise<SweepResult | undefined> {
    const days = Number(this.o.config.get('downloadsKeepDays') ?? 30);
    if (!(days > 0) || this.running) return Promise.resolve(undefined);
    const now = this.o.now?.() ?? Date.now();
    const p = sweepFolder(join(this.o.home, 'downloads'), now - days * DAY_MS)
      .then((r) => {
        if (r.files)
          this.o.log.info(
            `Removed ${r.files} file(s) (${(r.bytes / 1048576).toFixed(1)} MB) from downloads/ not written for ${days} day(s) (downloadsKeepDays).`,
          );
        return r;
      })
      .catch((e: unknown) => {
        this.o.log.warn(`Could not sweep downloads/: ${errorMessage(e)}`);
        return undefined;
      })
      .finally(() => {
        this.running = undefined;
      });
    this.running = p;
    return p;
  }

  /** Rotates this process's log file past `logFileMaxMB`. */
  rotateLog(): void {
    const file = this.o.logFile;
    if (!file) return;
    try {
      const mb = Number(this.o.config.get('logFileMaxMB') ?? 10);
      if (rotateInPlace(file, mb * 1048576)) this.o.log.info(`${file} passed ${mb} MB; the earlier lines are in ${file}.1.`);
    } catch (e) {
      this.o.log.warn(`Could not rotate ${file}: ${errorMessage(e)}`);
    }
  }
}
