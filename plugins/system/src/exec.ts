/**
 * Running one argv: `spawn(file, args, { shell: false })` (what `execFile` does underneath), never a shell.
 *
 * - Own process group (`detached`), so a timeout kills the program and everything it started (SIGTERM, then
 *   SIGKILL after 2 s).
 * - stdout and stderr are captured up to `maxBytes` each; the rest is drained and dropped, and the result says
 *   "truncated".
 * - The child's environment is Keel's minus secrets: every variable whose name contains KEY, TOKEN, SECRET,
 *   PASSWORD, PASSWD, CREDENTIAL or AUTH, and every KEEL_* variable.
 * - Retries: only when the program could not be started for a passing reason (EAGAIN, EMFILE, ENFILE, ENOMEM,
 *   EBUSY, ETXTBSY). A command that ran (and failed, or timed out) is never run again on its own: it may have
 *   done part of its work.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';

export interface RunOptions {
  cwd: string;
  timeoutMs: number;
  retries: number;
  maxBytes: number;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
}

export interface RunResult {
  started: boolean;
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  durationMs: number;
  attempts: number;
  error?: string;
}

const SECRET_ENV = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE|SESSION/i;
const TRANSIENT = new Set(['EAGAIN', 'EMFILE', 'ENFILE', 'ENOMEM', 'EBUSY', 'ETXTBSY']);

/** Keel's environment without its secrets. */
export function childEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined || SECRET_ENV.test(k) || /^KEEL_/i.test(k)) continue;
    out[k] = v;
  }
  return out;
}

/**
 * Whether `program` would be found and could be started (the way execvp looks it up), so that a command run
 * through the jail's helpers reports a missing program as plainly as a direct spawn does ("Could not start").
 */
export function startable(program: string, cwd: string, env: NodeJS.ProcessEnv): boolean {
  const ok = (p: string) => {
    try {
      accessSync(p, constants.X_OK);
      return statSync(p).isFile();
    } catch {
      return false;
    }
  };
  if (program.includes('/')) return ok(isAbsolute(program) ? program : resolve(cwd, program));
  return (env.PATH ?? '/usr/bin:/bin').split(delimiter).some((d) => d !== '' && ok(join(resolve(cwd, d), program)));
}

/** The result of a program that could not be found, without starting anything. */
export function notFound(program: string): RunResult {
  return {
    started: false,
    exitCode: null,
    signal: null,
    timedOut: false,
    stdout: '',
    stderr: '',
    stdoutTruncated: false,
    stderrTruncated: false,
    durationMs: 0,
    attempts: 1,
    error: `ENOENT: ${program} was not found (or is not executable)`,
  };
}

export async function runArgv(argv: string[], opts: RunOptions): Promise<RunResult> {
  const attempts = Math.max(0, Math.floor(opts.retries)) + 1;
  let last: RunResult | undefined;
  for (let n = 1; n <= attempts; n++) {
    last = await once(argv, opts);
    last.attempts = n;
    if (last.started || !last.error || !TRANSIENT.has(last.error.split(':')[0] ?? '')) return last;
    await new Promise((r) => setTimeout(r, 200 * n));
  }
  return last as RunResult;
}

function once(argv: string[], opts: RunOptions): Promise<RunResult> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const [file, ...args] = argv as [string, ...string[]];
    const out = { buf: [] as Buffer[], size: 0, truncated: false };
    const err = { buf: [] as Buffer[], size: 0, truncated: false };
    let started = false;
    let timedOut = false;
    let settled = false;
    let killTimer: NodeJS.Timeout | undefined;
    const child = spawn(file, args, {
      cwd: opts.cwd,
      env: opts.env ?? childEnv(),
      shell: false,
      detached: process.platform !== 'win32',
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
    });
    const killGroup = (sig: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined && process.platform !== 'win32') process.kill(-child.pid, sig);
        else child.kill(sig);
      } catch {
        try {
          child.kill(sig);
        } catch {
          /* already gone */
        }
      }
    };
    const collect = (sink: typeof out) => (chunk: Buffer) => {
      const room = opts.maxBytes - sink.size;
      if (room <= 0) {
        sink.truncated = true;
        return;
      }
      if (chunk.length > room) {
        sink.buf.push(chunk.subarray(0, room));
        sink.size += room;
        sink.truncated = true;
      } else {
        sink.buf.push(chunk);
        sink.size += chunk.length;
      }
    };
    child.stdout?.on('data', collect(out));
    child.stderr?.on('data', collect(err));
    child.on('spawn', () => {
      started = true;
    });
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup('SIGTERM');
      killTimer = setTimeout(() => killGroup('SIGKILL'), 2000);
    }, opts.timeoutMs);
    const onAbort = () => {
      timedOut = true;
      killGroup('SIGKILL');
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const finish = (exitCode: number | null, signal: string | null, error?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      opts.signal?.removeEventListener('abort', onAbort);
      // Whatever the program left behind in its group goes with it.
      if (timedOut) killGroup('SIGKILL');
      resolve({
        started,
        exitCode,
        signal,
        timedOut,
        stdout: Buffer.concat(out.buf).toString('utf8'),
        stderr: Buffer.concat(err.buf).toString('utf8'),
        stdoutTruncated: out.truncated,
        stderrTruncated: err.truncated,
        durationMs: Math.round(performance.now() - t0),
        attempts: 1,
        ...(error ? { error } : {}),
      });
    };
    child.on('error', (e: NodeJS.ErrnoException) => finish(null, null, `${e.code ?? 'ERROR'}: ${e.message}`));
    child.on('close', (code, sig) => finish(code, sig));
  });
}

/** The text result of a run, for the agent. */
export function formatResult(argv: string[], r: RunResult, maxBytes: number, timeoutMs: number, notes: string[] = []): string {
  const lines: string[] = [];
  const cmd = argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(' ');
  if (!r.started) {
    lines.push(
      `Command: ${cmd}`,
      `Could not start: ${r.error ?? 'unknown error'} (after ${r.attempts} attempt${r.attempts === 1 ? '' : 's'})`,
      ...notes,
    );
    return lines.join('\n');
  }
  lines.push(`Command: ${cmd}`);
  if (r.timedOut) lines.push(`Timed out after ${timeoutMs} ms: the process group was killed`);
  lines.push(
    `Exit code: ${r.exitCode === null ? 'none' : r.exitCode}${r.signal ? `, signal ${r.signal}` : ''}`,
    `Duration: ${r.durationMs} ms`,
    ...notes,
  );
  lines.push('--- stdout ---', r.stdout.replace(/\n$/, ''));
  if (r.stdoutTruncated) lines.push(`[stdout truncated at ${maxBytes} bytes]`);
  if (r.stderr || r.stderrTruncated) {
    lines.push('--- stderr ---', r.stderr.replace(/\n$/, ''));
    if (r.stderrTruncated) lines.push(`[stderr truncated at ${maxBytes} bytes]`);
  }
  return lines.join('\n');
}
