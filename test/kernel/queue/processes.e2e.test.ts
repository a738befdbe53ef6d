/**
 * Real processes sharing one KEEL_HOME: producers killed mid-burst, and several `keel push`-like writers racing
 * a runner that tails the journal. Each test waits on what the processes report, never on a clock.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ActionQueue, isOwnerAlive } from '../../../kernel/queue/index.js';
import { waitFor } from '../../helpers.js';
import { captureLog, FIXTURES, ROOT, tempHome, TSX } from './helpers.js';

interface Child {
  proc: ChildProcess;
  /** Complete stdout lines so far. */
  lines: string[];
  /** Resolves once stdout is drained and the process has exited. */
  closed: Promise<number | null>;
  /** Resolves once at least n lines were printed. */
  waitForLines(n: number): Promise<void>;
}

const children: ChildProcess[] = [];
let home: string;
let cleanup: () => void;

beforeEach(() => {
  ({ home, cleanup } = tempHome());
});

/**
 * tsx runs the script in a child node process of its own: kill the whole process group, or the process doing
 * the work would survive its tsx parent.
 */
function killHard(c: ChildProcess): void {
  try {
    process.kill(-c.pid!, 'SIGKILL');
  } catch {
    // already gone
  }
}

afterEach(() => {
  for (const c of children.splice(0)) killHard(c);
  cleanup();
});

function run(fixture: string, args: string[]): Child {
  const proc = spawn(TSX, [join(FIXTURES, fixture), ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  children.push(proc);
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  proc.stdout!.setEncoding('utf8');
  proc.stdout!.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
    for (const w of waiters.splice(0)) {
      if (lines.length >= w.n) w.resolve();
      else waiters.push(w);
    }
  });
  proc.stderr!.on('data', (c) => {
    stderr += String(c);
  });
  const closed = new Promise<number | null>((resolve) => proc.on('close', (code) => resolve(code)));
  void closed.then(() => {
    for (const w of waiters.splice(0)) w.resolve();
  });
  return {
    proc,
    lines,
    closed,
    waitForLines: (n) =>
      new Promise<void>((resolve, reject) => {
        const check = () => (lines.length >= n ? resolve() : reject(new Error(`${fixture} ended after ${lines.length} lines: ${stderr}`)));
        if (lines.length >= n) resolve();
        else waiters.push({ n, resolve: () => (proc.exitCode !== null || proc.signalCode !== null ? check() : resolve()) });
      }),
  };
}

async function openOwner(): Promise<ActionQueue> {
  return ActionQueue.open({ home, owner: true, log: captureLog() });
}

describe('queue shared by real processes', () => {
  it.each([
    ['ActionQueue.push with 16 concurrent producers (group commit)', 'queue', 400],
    ['appendPush, the `keel push` path', 'append', 150],
  ])('keeps every acknowledged push when the producer is killed mid-burst: %s', async (_name, mode, atLeast) => {
    const child = run('push-loop.ts', [home, mode, '16']);
    await child.waitForLines(atLeast);
    killHard(child.proc);
    await child.closed;
    // The pipe closes while the killed process is still exiting: on a loaded machine it may look alive a moment longer.
    await waitFor(() => !isOwnerAlive(home), 'the killed producer to be gone');
    const acknowledged = child.lines.filter((l) => l.startsWith('act_'));
    expect(acknowledged.length).toBeGreaterThanOrEqual(atLeast);

    const q = await openOwner();
    try {
      expect(q.problems).toEqual([]);
      const missing = acknowledged.filter((id) => !q.get(id));
      expect(missing).toEqual([]);
      expect(q.list().pending.every((a) => a.status === 'pending')).toBe(true);
    } finally {
      await q.close();
    }
  });

  it('a runner tailing the journal takes every action pushed by 4 concurrent processes exactly once', async () => {
    const q = await openOwner();
    try {
      const writers = [0, 1, 2, 3].map((i) => run('append-many.ts', [home, '200', `writer${i}`]));
      let exited = 0;
      const codes = writers.map((w) => w.closed.then((c) => (exited++, c)));
      const taken: string[] = [];
      const nextChange = () =>
        new Promise<void>((resolve) => {
          const off = q.onChange(() => {
            off();
            clearTimeout(t);
            resolve();
          });
          // Also look again now and then: onChange only fires for changes, not for backoff expiry.
          const t = setTimeout(() => {
            off();
            resolve();
          }, 50);
        });
      for (;;) {
        const a = await q.take();
        if (a) {
          taken.push(a.id);
          await q.complete(a.id, 'ok');
          continue;
        }
        const printed = writers.reduce((n, w) => n + w.lines.length, 0);
        if (exited === writers.length && taken.length >= printed) break;
        await nextChange();
      }
      expect(await Promise.all(codes)).toEqual([0, 0, 0, 0]);
      const pushed = writers.flatMap((w) => w.lines);
      expect(pushed).toHaveLength(800);
      expect(taken).toHaveLength(800);
      expect(new Set(taken).size).toBe(800);
      expect(new Set(taken)).toEqual(new Set(pushed));
      expect(q.counts()).toMatchObject({ pending: 0, executing: 0 });
      expect(q.problems).toEqual([]);
    } finally {
      await q.close();
    }
  });

  it('a killed runner leaves its executing action to the next owner, pending again and not counted as a retry', async () => {
    const child = run('take-and-hang.ts', [home]);
    await child.waitForLines(1);
    const { taken } = JSON.parse(child.lines[0]!) as { taken: string };
    expect(isOwnerAlive(home)).toBe(true);
    killHard(child.proc);
    await child.closed;
    await waitFor(() => !isOwnerAlive(home), 'the killed runner to be gone');

    const q = await openOwner();
    try {
      expect(q.get(taken)).toMatchObject({ task: 'first', status: 'pending', metadata: { retries: 0 } });
      expect((await q.take())?.id).toBe(taken);
      expect((await q.take())?.task).toBe('second');
    } finally {
      await q.close();
    }
  });
});
