/**
 * A progress line for CLI work that can take more than a couple of seconds (`keel stop` waiting, `keel doctor`
 * probing): on a terminal one line with what is happening and the time elapsed, redrawn in place and cleared
 * when done; when the stream is not a terminal (scripts, logs, `--json`) nothing at all. Built on cli-progress,
 * loaded only when a terminal will show it.
 */

/**
 * A running progress line.
 * @example const p = await progressLine('Stopping agent'); p.update('Stopping agent (waiting for the action in flight)'); p.stop();
 */
export interface ProgressLine {
  /** Change the text shown. */
  update(label: string): void;
  /** Clear the line (safe to call twice). */
  stop(): void;
}

const NOOP: ProgressLine = { update() {}, stop() {} };

/**
 * Start a progress line on `stream` (default stderr) when it is a terminal and `quiet` is not set; otherwise a
 * no-op. The elapsed time updates by itself.
 * @example
 * const p = await progressLine('Checking Keel', { quiet: options.json === true });
 * try { await work(); } finally { p.stop(); }
 */
export async function progressLine(label: string, opts: { stream?: NodeJS.WriteStream; quiet?: boolean } = {}): Promise<ProgressLine> {
  const stream = opts.stream ?? process.stderr;
  if (opts.quiet || stream.isTTY !== true) return NOOP;
  const { SingleBar } = await import('cli-progress');
  const bar = new SingleBar({ stream, format: '{label} … {duration_formatted}', hideCursor: true, clearOnComplete: true, fps: 5 });
  bar.start(1, 0, { label });
  let stopped = false;
  return {
    update(next) {
      if (!stopped) bar.update({ label: next });
    },
    stop() {
      if (stopped) return;
      stopped = true;
      bar.stop();
    },
  };
}

/**
 * Run `work` under a progress line (see `progressLine`).
 * @example const report = await withProgress('Checking Keel', () => buildReport(sources), { quiet: json });
 */
export async function withProgress<T>(
  label: string,
  work: (line: ProgressLine) => Promise<T>,
  opts: { stream?: NodeJS.WriteStream; quiet?: boolean } = {},
): Promise<T> {
  const line = await progressLine(label, opts);
  try {
    return await work(line);
  } finally {
    line.stop();
  }
}
