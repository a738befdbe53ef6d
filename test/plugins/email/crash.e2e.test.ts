/**
 * `kill -9` of Keel in the middle of a burst of incoming mail: after a restart every mail is an action exactly
 * once (nothing lost, nothing twice), through the real imapflow against dovecot (a mailbox of its own on the run's
 * shared instance: it is Keel that is killed, not dovecot).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rm, tmp } from '../../helpers.js';
import { bootEmail, cleanup, emailConfig } from './harness.js';
import { dovecotProblem, fileDovecot, rawMail, type TestCa, type TestImap } from './servers.js';

const problem = dovecotProblem();
if (problem) console.warn(`email crash test skipped: ${problem}`);

let ca: TestCa;
let imap: TestImap;
const children: ChildProcess[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  if (problem) return;
  ({ ca, imap } = await fileDovecot());
}, 60_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await cleanup();
  await imap?.stop();
  for (const d of dirs) rm(d);
});

function child(
  home: string,
  config: Record<string, unknown>,
  builtins: string,
): { proc: ChildProcess; wait(test: (line: string) => boolean, what: string, ms?: number): Promise<string> } {
  const proc = spawn(
    process.execPath,
    ['--import', 'tsx', join(import.meta.dirname, 'crash-child.ts'), home, JSON.stringify(config), builtins],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(proc);
  const lines: string[] = [];
  const waiters: Array<() => void> = [];
  let buf = '';
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split('\n');
    buf = parts.pop()!;
    lines.push(...parts);
    for (const w of waiters.splice(0)) w();
  });
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => {
    err += d.toString();
  });
  return {
    proc,
    wait: (test, what, ms = 20_000) =>
      new Promise<string>((resolve, reject) => {
        const deadline = setTimeout(() => reject(new Error(`timed out waiting for ${what}; stderr: ${err.slice(-2000)}`)), ms);
        const check = () => {
          const hit = lines.find(test);
          if (hit) {
            clearTimeout(deadline);
            resolve(hit);
          } else waiters.push(check);
        };
        check();
      }),
  };
}

describe.skipIf(problem)('email and kill -9', () => {
  it('a burst of mail interrupted by SIGKILL: after the restart each mail is exactly one action', async () => {
    const home = tmp('keel-email-crash-');
    const builtins = tmp('keel-builtins-');
    dirs.push(home, builtins);
    const config = { ...emailConfig({ ca, imap }), emailEnabled: true, emailAutoReplyEnabled: true, emailSweepIntervalMs: 3_600_000 };
    const first = child(home, config, builtins);
    await first.wait((l) => l === 'ready', 'the first process to connect', 45_000);
    const N = 20;
    const subjects = Array.from({ length: N }, (_, i) => `burst ${i}`);
    const appending = (async () => {
      for (const s of subjects) await imap.append(rawMail({ from: 'Ada <ada@example.org>', subject: s }));
    })();
    await first.wait((l) => /^count (\d+)$/.test(l) && Number(l.slice(6)) >= 4, 'a few actions');
    first.proc.kill('SIGKILL');
    await new Promise((r) => first.proc.once('exit', r));
    await appending;
    const second = child(home, config, builtins);
    await second.wait((l) => l === 'ready', 'the second process to connect', 45_000);
    await second.wait((l) => l === `count ${N}`, `${N} actions`, 30_000);
    second.proc.kill('SIGTERM');
    await new Promise((r) => second.proc.once('exit', r));
    const k = await bootEmail({ config: emailConfig({ ca, imap }), home });
    const got = k.actions().map((a) => /Subject: (.*)/.exec(a.task)![1]);
    expect(got.sort()).toEqual([...subjects].sort());
    await k.stop();
  }, 150_000);
});
