/**
 * Issue 35.2, the attacks for real: agent-written code (a default snippet, no permissions) tries to kill an
 * unrelated process, to send SIGUSR1 to a Node process (which opens an unauthenticated inspector on a plain Node,
 * and did so on Keel), to `process._debugProcess` it, and to signal its own process group (which was Keel's).
 * Each canary records any signal it gets in a file. Before the fix every one of these arrived.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runSandboxed } from '../../../plugins/coder/src/sandbox.js';

let dir: string;
const canaries: ChildProcess[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'keel-sbx-sig-'));
});
afterEach(() => {
  for (const c of canaries.splice(0)) c.kill('SIGKILL');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A Node process that writes `<name>` when it gets SIGUSR1 or SIGTERM, and says when it is ready. */
async function canary(name: string): Promise<{ pid: number; file: string; child: ChildProcess }> {
  const file = join(dir, name);
  const code = `const fs = require('node:fs');
for (const s of ['SIGUSR1', 'SIGTERM', 'SIGHUP']) process.on(s, () => fs.appendFileSync(${JSON.stringify(file)}, s + '\\n'));
setInterval(() => {}, 1000); console.log('ready');`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'ignore'] });
  canaries.push(child);
  await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
  return { pid: child.pid!, file, child };
}

const attack = (body: string, args: unknown) => runSandboxed({ body, args, timeoutMs: 10_000, maxOutputBytes: 65_536 });

const TRY = `const out = {};
for (const s of ['SIGUSR1', 'SIGUSR2', 'SIGHUP', 'SIGTERM']) process.on(s, () => {}); // its own group is itself
for (const [name, f] of Object.entries({
  term: () => process.kill(args.pid, 'SIGTERM'),
  usr1: () => process.kill(args.pid, 'SIGUSR1'),
  debug: () => process._debugProcess(args.pid),
})) {
  try { f(); out[name] = 'sent'; } catch (e) { out[name] = e.code ?? String(e); }
}
out.ppid = process.ppid;
out.pid = process.pid;
return out;`;

describe('sandbox: signals and inspectors outside the sandbox', () => {
  it('cannot signal, debug or even see an unrelated process', async () => {
    const c = await canary('unrelated');
    const r = await attack(TRY, { pid: c.pid });
    expect(r.ok, r.error).toBe(true);
    const out = r.result as Record<string, unknown>;
    expect(out.term).toBe('ESRCH');
    expect(out.usr1).toBe('ESRCH');
    expect(out.debug).not.toBe('sent');
    // Inside its own pid namespace the snippet is pid 1 and has no parent it can name.
    expect(out.pid).toBe(1);
    expect(out.ppid).toBe(0);
    await new Promise((r) => setTimeout(r, 200));
    expect(existsSync(c.file) ? readFileSync(c.file, 'utf8') : '').toBe('');
    expect(c.child.exitCode).toBeNull();
  });

  it("cannot reach the process that started it (Keel's place) through its pid, its group or every process", async () => {
    const file = join(dir, 'keel-stand-in');
    // The test process stands in for Keel: the sandbox's parent and, before the fix, in its process group.
    const got: string[] = [];
    const onSig = (s: string) => () => got.push(s);
    const handlers = (['SIGUSR1', 'SIGTERM', 'SIGHUP', 'SIGUSR2'] as const).map((s) => [s, onSig(s)] as const);
    for (const [s, h] of handlers) process.on(s, h);
    try {
      const r = await attack(
        `const out = {};
for (const [name, f] of Object.entries({
  me: () => process.kill(args.pid, 'SIGUSR1'),
  debug: () => process._debugProcess(args.pid),
})) { try { f(); out[name] = 'sent'; } catch (e) { out[name] = e.code ?? String(e); } }
return out;`,
        { pid: process.pid },
      );
      expect(r.ok, r.error).toBe(true);
      expect((r.result as Record<string, unknown>).me).toBe('ESRCH');
      // Its own group and "every process I may signal": the snippet may well end itself; Keel must hear nothing.
      await attack("process.kill(0, 'SIGUSR2'); return 'sent';", {});
      await attack("process.kill(-1, 'SIGHUP'); return 'sent';", {});
      await new Promise((r) => setTimeout(r, 200));
      expect(got).toEqual([]);
    } finally {
      for (const [s, h] of handlers) process.off(s, h);
    }
    expect(existsSync(file)).toBe(false);
  });

  it('refuses to run at all where the pid namespace cannot be made, with the reason', async () => {
    const c = await canary('refused');
    const r = runSandboxed({
      body: 'process.kill(args.pid, "SIGTERM"); return "ran";',
      args: { pid: c.pid },
      timeoutMs: 10_000,
      maxOutputBytes: 65_536,
      isolation: async () => ({ available: false, reason: 'unshare: unshare failed: Operation not permitted' }),
    });
    await expect(r).rejects.toMatchObject({
      code: 'KEEL_E_PLUGIN_ENVIRONMENT',
      message: expect.stringMatching(/process namespace of its own.*Operation not permitted/),
    });
    await new Promise((r) => setTimeout(r, 200));
    expect(existsSync(c.file)).toBe(false);
  });
});
