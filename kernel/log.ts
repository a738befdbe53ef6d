/**
 * Kernel logging: consola for people, a bounded in-memory ring for `GET /api/logs`, and scrubbing of every
 * known secret value, and of anything shaped like a credential, before a line goes anywhere.
 */
import { fstatSync } from 'node:fs';
import { formatWithOptions } from 'node:util';
import { createConsola, type ConsolaInstance, type ConsolaReporter } from 'consola';
import { scrubSecretShapes } from '../sdk/secret-shapes.js';
import type { LogEntry, Logger } from '../sdk/types.js';

export interface LogSinkOptions {
  /** Ring size for recent entries. */
  capacity?: number;
  /** Current secret values to scrub (only values of 6+ characters are scrubbed). */
  secrets?: () => string[];
  /** Extra writer, e.g. the daemon's log file. */
  write?: (entry: LogEntry) => void;
  /** consola level: 3 info (default), 4 debug, 0 silent. */
  level?: number;
  /** Write to stderr (default) or keep quiet (tests). */
  quiet?: boolean;
}

/** Whether this process's stderr is a regular file (a detached Keel's log, or a redirect). */
function stderrIsFile(): boolean {
  if (process.stderr.isTTY) return false;
  try {
    return fstatSync(2).isFile();
  } catch {
    return false;
  }
}

/** `2026-11-27T13:05:12.345Z [warn] [config] ...`: one line per entry, with its time. */
export const timedLines: ConsolaReporter = {
  log(entry) {
    const text = formatWithOptions({ colors: false }, ...entry.args);
    process.stderr.write(`${entry.date.toISOString()} [${entry.type}]${entry.tag ? ` [${entry.tag}]` : ''} ${text}\n`);
  },
};

let guarded = false;

/**
 * A failed write to standard error or output (a full disk under `daemon.log`, a closed pipe) is an 'error' event on
 * the stream; with no listener it would end the process on the next log line. The line is lost, the process goes
 * on (the dashboard's log page keeps the recent entries from memory).
 */
function guardStdio(): void {
  if (guarded) return;
  guarded = true;
  process.stderr.on('error', () => undefined);
  process.stdout.on('error', () => undefined);
}

export class LogSink {
  private readonly ring: LogEntry[] = [];
  private next = 0;
  private readonly capacity: number;
  private readonly consola: ConsolaInstance;
  private readonly listeners = new Set<(e: LogEntry) => void>();

  constructor(private readonly opts: LogSinkOptions = {}) {
    this.capacity = opts.capacity ?? 1000;
    guardStdio();
    // A terminal gets consola's fancy lines; a pipe or journald one plain line per entry (`[warn] [config] ...`),
    // without the blank lines the fancy reporter puts around warnings and errors; a file (daemon.log, gateway.log,
    // `2> keel.log`) the same line after its time, since nothing else will say when it happened.
    this.consola = createConsola({
      level: opts.quiet ? -999 : (opts.level ?? 3),
      stdout: process.stderr,
      stderr: process.stderr,
      fancy: Boolean(process.stderr.isTTY),
      ...(stderrIsFile() ? { reporters: [timedLines] } : {}),
    });
  }

  /**
   * Keel's own secret values (their first three characters kept, so a line still says which key), then anything
   * shaped like a credential (sdk/secret-shapes.ts): a token a person pasted into a chat message reaches no log.
   */
  scrub(message: string): string {
    const secrets = this.opts.secrets?.() ?? [];
    let out = message;
    for (const s of secrets) {
      if (s.length >= 6 && out.includes(s)) out = out.split(s).join(`${s.slice(0, 3)}****`);
    }
    return scrubSecretShapes(out);
  }

  logger(tag: string): Logger {
    const c = this.consola.withTag(tag);
    // A message that names its source itself (`chatC: connected …`, kept so for `GET /api/logs` and the log file)
    // is printed without it: consola's `[chatC]` says it already.
    const own = `${tag}: `;
    const emit = (level: 'debug' | 'info' | 'warn' | 'error', message: string, rest: unknown[]) => {
      // A debug line goes to the console only (never the ring or the file): unless it is printed, it is neither
      // formatted nor scrubbed.
      if (level === 'debug' && this.consola.level < 4) return;
      const text = this.scrub(rest.length ? `${message} ${rest.map(fmt).join(' ')}` : message);
      c[level](text.startsWith(own) ? text.slice(own.length) : text);
      if (level === 'debug') return;
      const entry: LogEntry = { level, message: text, timestamp: new Date().toISOString(), tag };
      this.push(entry);
    };
    return {
      debug: (m, ...r) => emit('debug', m, r),
      info: (m, ...r) => emit('info', m, r),
      warn: (m, ...r) => emit('warn', m, r),
      error: (m, ...r) => emit('error', m, r),
    };
  }

  private push(entry: LogEntry): void {
    if (this.ring.length < this.capacity) this.ring.push(entry);
    else this.ring[this.next] = entry;
    this.next = (this.next + 1) % this.capacity;
    this.opts.write?.(entry);
    for (const l of this.listeners) l(entry);
  }

  /** Newest last; filtered by level; at most `limit` (newest kept). */
  recent(opts: { level?: LogEntry['level']; limit?: number } = {}): LogEntry[] {
    const ordered = this.ring.length < this.capacity ? this.ring : [...this.ring.slice(this.next), ...this.ring.slice(0, this.next)];
    const filtered = opts.level ? ordered.filter((e) => e.level === opts.level) : ordered;
    const limit = opts.limit ?? 100;
    return filtered.slice(Math.max(0, filtered.length - limit));
  }

  onEntry(listener: (e: LogEntry) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

function fmt(v: unknown): string {
  if (v instanceof Error) return v.message;
  if (typeof v === 'string') return v;
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}
