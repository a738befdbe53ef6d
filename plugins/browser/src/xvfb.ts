/**
 * A private virtual display for headful mode where there is none (a server): Xvfb started on demand with
 * `-displayfd` (it picks a free display number and tells us), stopped with the plugin.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export function findXvfb(): string | undefined {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(delimiter)) {
    const p = join(dir, 'Xvfb');
    if (dir && existsSync(p)) return p;
  }
  return undefined;
}

/** Whether a headful browser can open a window here. */
export function displayAvailable(): boolean {
  return process.platform !== 'linux' || Boolean(process.env.DISPLAY || process.env.WAYLAND_DISPLAY) || findXvfb() !== undefined;
}

export class Xvfb {
  private proc: ChildProcess | undefined;
  private display: Promise<string> | undefined;

  /** The DISPLAY of the running Xvfb, started when needed. */
  start(): Promise<string> {
    if (this.display && this.proc && this.proc.exitCode === null) return this.display;
    const bin = findXvfb();
    if (!bin) return Promise.reject(new Error('Xvfb is not installed'));
    const proc = spawn(bin, ['-displayfd', '3', '-nolisten', 'tcp', '-screen', '0', '1366x768x24'], {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    });
    this.proc = proc;
    this.display = new Promise<string>((resolve, reject) => {
      let out = '';
      let err = '';
      const timer = setTimeout(() => reject(new Error(`Xvfb gave no display within 10 s: ${err.slice(-300)}`)), 10_000);
      proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      proc.stdio[3]!.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /^(\d+)\n/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(`:${m[1]}`);
        }
      });
      proc.on('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`Xvfb exited (${code}): ${err.slice(-300)}`));
      });
      // A spawn that fails (out of memory, no permission) is an 'error' event: without a listener, the process ends.
      proc.on('error', (e) => {
        clearTimeout(timer);
        reject(new Error(`Xvfb could not start: ${e.message}`));
      });
    });
    this.display.catch(() => this.stop());
    return this.display;
  }

  stop(): void {
    if (this.proc && this.proc.exitCode === null) this.proc.kill('SIGTERM');
    this.proc = undefined;
    this.display = undefined;
  }
}
