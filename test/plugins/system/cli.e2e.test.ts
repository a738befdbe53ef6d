/**
 * `keel commands list|approve|refuse` through the built dist/cli.js, while a kernel holding the request runs.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startKernel } from '../../../kernel/kernel.js';
import { LogSink } from '../../../kernel/log.js';
import { rm, tmp } from '../../helpers.js';

const CLI = join(import.meta.dirname, '..', '..', '..', 'dist', 'cli.js');

/**
 * Every vitest run's global setup rebuilds the shared dist/ (rm, then build): a concurrent run elsewhere can catch
 * it half-built. Such a run is retried; anything else is returned as it is.
 */
async function keel(home: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  for (let attempt = 0; ; attempt++) {
    const r = await keelOnce(home, args);
    const halfBuilt = /unknown command 'commands'|ERR_MODULE_NOT_FOUND|Cannot find module/.test(r.stderr);
    if (!halfBuilt || attempt >= 10) return r;
    await new Promise((ok) => setTimeout(ok, 500));
  }
}

function keelOnce(home: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { ...process.env, KEEL_HOME: home }, timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

describe('keel commands', () => {
  it('lists, approves (runs) and refuses pending commands while Keel runs', async () => {
    const home = tmp('keel-system-cli-');
    cleanup.push(() => rm(home));
    const work = join(home, 'work');
    mkdirSync(work);
    writeFileSync(join(home, 'keel.config.yaml'), `commandWorkingDir: ${JSON.stringify(work)}\n`, { mode: 0o600 });
    const kernel = await startKernel({ home, env: {}, watchSkills: false, logs: new LogSink({ quiet: true }) });
    cleanup.push(() => kernel.stop());
    expect(kernel.host.status('system')?.state, kernel.host.status('system')?.reason).toBe('loaded');
    const op = kernel.operator;
    const a = await kernel.execute('run_command', { command: 'touch approved-by-cli' }, op);
    const b = await kernel.execute('run_command', { command: 'touch refused-by-cli' }, op);
    const idA = /(cmd_\d+_[0-9a-f]+)/.exec(a.result)![1]!;
    const idB = /(cmd_\d+_[0-9a-f]+)/.exec(b.result)![1]!;

    const list = await keel(home, ['commands', 'list']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain(idA);
    expect(list.stdout).toContain('touch approved-by-cli');
    const json = JSON.parse((await keel(home, ['commands', 'list', '--json'])).stdout) as { commands: Array<{ id: string }> };
    expect(json.commands.map((c) => c.id)).toEqual([idA, idB]);

    const approve = await keel(home, ['commands', 'approve', idA]);
    expect(approve.code, approve.stderr).toBe(0);
    expect(approve.stdout).toContain('Exit code: 0');
    expect(existsSync(join(work, 'approved-by-cli'))).toBe(true);

    const refuse = await keel(home, ['commands', 'refuse', idB]);
    expect(refuse.code, refuse.stderr).toBe(0);
    expect(existsSync(join(work, 'refused-by-cli'))).toBe(false);

    // The running plugin re-reads the file: both are gone for it too.
    const late = await kernel.execute('approve_command', { id: idB, decision: 'approve' }, op);
    expect(late.success).toBe(false);
    expect((await keel(home, ['commands', 'approve', 'cmd_0_nothing'])).code).toBe(1);
    expect((await keel(home, ['commands', 'frobnicate'])).code).toBe(2);
  });
});
