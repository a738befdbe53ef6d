/**
 * Token accounting: one JSON line per model call in `tokenLogPath`, and a per-provider, per-model summary in
 * `tokenUsagePath` replaced atomically (temp file + rename), so a crash leaves the last good summary.
 * Writes are serialised within the process and grouped (records that arrive during a write share the next one).
 * Several Keel processes on one home (the agent, a separate gateway running skills) take `<summary>.lock` for each
 * write, then rotate, append and re-read the summary before adding to it: their totals add up, no rotation moves
 * away the other's fresh log.
 */
import { errorsFor } from '../../../sdk/errors.js';
import { appendFile, mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { withFileLock } from '../../../sdk/file-lock.js';

const coded = errorsFor('agent');

export interface UsageRecord {
  timestamp: string;
  provider: string;
  model: string;
  purpose: string;
  ok: boolean;
  inputTokens: number;
  outputTokens: number;
  durationMs: number;
  actionId?: string;
  /** Short reason when `ok` is false (keys masked). */
  error?: string;
}

export interface Counter {
  calls: number;
  failures: number;
  inputTokens: number;
  outputTokens: number;
}

export interface UsageSummary {
  updatedAt: string;
  total: Counter;
  providers: Record<string, Counter & { models: Record<string, Counter> }>;
}

const zero = (): Counter => ({ calls: 0, failures: 0, inputTokens: 0, outputTokens: 0 });

function add(c: Counter, r: UsageRecord): void {
  c.calls += 1;
  if (!r.ok) c.failures += 1;
  c.inputTokens += r.inputTokens;
  c.outputTokens += r.outputTokens;
}

export class UsageLog {
  private pending: UsageRecord[] = [];
  private running: Promise<void> | undefined;
  private tmpSeq = 0;

  constructor(
    private readonly paths: () => { log: string; summary: string },
    private readonly onError: (e: unknown) => void,
    /** Size past which the log moves to `<log>.1` before the next append (0: never); the summary keeps the totals. */
    private readonly maxBytes: () => number = () => 0,
  ) {}

  /**
   * Queue one record; resolves when it is written (errors are reported, never thrown). Records that arrive
   * while a write is under way go out together in the next one (group commit: one append and one rename).
   */
  record(r: UsageRecord): Promise<void> {
    this.pending.push(r);
    return this.flush();
  }

  /** Resolves when every queued record is written. */
  flush(): Promise<void> {
    this.running ??= this.drain().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async drain(): Promise<void> {
    while (this.pending.length) {
      const batch = this.pending;
      this.pending = [];
      try {
        await this.write(batch);
      } catch (e) {
        this.onError(e);
      }
    }
  }

  private async write(batch: UsageRecord[]): Promise<void> {
    const { summary } = this.paths();
    await mkdir(dirname(summary), { recursive: true });
    await withFileLock(`${summary}.lock`, () => this.writeLocked(batch), { what: 'token usage summary' });
  }

  private async writeLocked(batch: UsageRecord[]): Promise<void> {
    const { log, summary } = this.paths();
    await mkdir(dirname(log), { recursive: true });
    const max = this.maxBytes();
    if (max > 0) {
      const size = await stat(log).then(
        (st) => st.size,
        () => 0,
      );
      if (size > max) await rename(log, `${log}.1`).catch(() => undefined); // another process rotated it first
    }
    await appendFile(log, batch.map((r) => `${JSON.stringify(r)}\n`).join(''), { mode: 0o600 });
    let s: UsageSummary;
    try {
      s = JSON.parse(await readFile(summary, 'utf8')) as UsageSummary;
      if (!s || typeof s !== 'object' || !s.providers || !s.total) throw coded('KEEL_E_PLUGIN_FAILED', 'malformed');
    } catch {
      s = { updatedAt: batch[0]!.timestamp, total: zero(), providers: {} };
    }
    for (const r of batch) {
      const p = (s.providers[r.provider] ??= { ...zero(), models: {} });
      const m = (p.models[r.model] ??= zero());
      add(s.total, r);
      add(p, r);
      add(m, r);
      s.updatedAt = r.timestamp;
    }
    const tmp = `${summary}.${process.pid}.${++this.tmpSeq}.tmp`;
    await writeFile(tmp, `${JSON.stringify(s, null, 2)}\n`, { mode: 0o600 });
    await rename(tmp, summary);
  }
}
