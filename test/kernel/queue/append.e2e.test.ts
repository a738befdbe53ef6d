import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorCodes } from '../../../kernel/errors.js';
import { ActionQueue, appendPush, isOwnerAlive } from '../../../kernel/queue/index.js';
import { captureLog, ROOT, tempHome } from './helpers.js';

let home: string;
let cleanup: () => void;

beforeEach(() => {
  ({ home, cleanup } = tempHome());
});

afterEach(() => cleanup());

/** The pid of a process that has certainly exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '0']);
  return r.pid!;
}

describe('appendPush (the `keel push` fast path)', () => {
  it('writes one durable push op, and the next owner finds the action', async () => {
    const a = await appendPush(join(home, 'fresh'), { task: 'hello', priority: '8' });
    expect(a).toMatchObject({ task: 'hello', priority: 8, status: 'pending' });
    const lines = readFileSync(join(home, 'fresh', 'actions.journal'), 'utf8')
      .trim()
      .split('\n');
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[1]!)).toMatchObject({ op: 'push', action: { id: a.id } });
    expect(existsSync(join(home, 'fresh', 'actions.lock'))).toBe(false);
    const q = await ActionQueue.open({ home: join(home, 'fresh'), owner: true, log: captureLog() });
    expect(q.get(a.id)?.task).toBe('hello');
    await q.close();
  });

  it('rejects bad input before touching the disk', async () => {
    await expect(appendPush(home, { task: '' })).rejects.toMatchObject({ code: ErrorCodes.TASK_EMPTY });
    await expect(appendPush(home, { task: 'x', priority: 'high' })).rejects.toMatchObject({ code: ErrorCodes.PRIORITY_INVALID });
    expect(existsSync(join(home, 'actions.journal'))).toBe(false);
  });

  it('takes over a lock left by a dead process', async () => {
    writeFileSync(join(home, 'actions.lock'), `${deadPid()} 0badc0de\n`);
    const a = await appendPush(home, { task: 'after a crash' }, { timeoutMs: 5000 });
    expect(readFileSync(join(home, 'actions.journal'), 'utf8')).toContain(a.id);
    expect(existsSync(join(home, 'actions.lock'))).toBe(false);
  });

  it('takes over an empty lock file whose creator died before writing its pid', async () => {
    const lock = join(home, 'actions.lock');
    writeFileSync(lock, '');
    const old = new Date(Date.now() - 60_000);
    utimesSync(lock, old, old);
    await appendPush(home, { task: 'x' }, { timeoutMs: 5000 });
    expect(existsSync(lock)).toBe(false);
  });

  it('waits for a live holder and then reports the lock clearly', async () => {
    // Another process that is alive holds it.
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    writeFileSync(join(home, 'actions.lock'), `${holder.pid} feedface\n`);
    const err = await appendPush(home, { task: 'x' }, { timeoutMs: 100 })
      .catch((e: unknown) => e)
      .finally(() => holder.kill('SIGKILL'));
    expect(err).toMatchObject({ code: ErrorCodes.QUEUE_LOCKED });
    expect(String((err as Error).message)).toContain(join(home, 'actions.lock'));
    expect(existsSync(join(home, 'actions.journal'))).toBe(false);
  });

  it('lets a new owner take over from a dead one', async () => {
    writeFileSync(join(home, 'queue.owner'), `${deadPid()}\n`);
    expect(isOwnerAlive(home)).toBe(false);
    const q = await ActionQueue.open({ home, owner: true, log: captureLog() });
    expect(isOwnerAlive(home)).toBe(true);
    expect(readFileSync(join(home, 'queue.owner'), 'utf8').trim()).toBe(String(process.pid));
    await q.close();
    expect(existsSync(join(home, 'queue.owner'))).toBe(false);
  });

  it('keeps its import graph to node built-ins and a few small queue, util and SDK files', () => {
    const seen = new Set<string>();
    const external = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const src = readFileSync(file, 'utf8');
      for (const m of src.matchAll(/^import\s+(?!type\s)[^'"]*?from\s+'([^']+)'|^import\s+'([^']+)'/gm)) {
        const spec = (m[1] ?? m[2])!;
        if (spec.startsWith('.')) visit(resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
        else external.add(spec);
      }
    };
    visit(join(ROOT, 'kernel', 'queue', 'append.ts'));
    expect([...external].filter((s) => !s.startsWith('node:'))).toEqual([]);
    const local = [...seen].map((f) => f.slice(ROOT.length + 1)).sort();
    expect(local).toEqual([
      'kernel/errors.ts',
      'kernel/queue/action.ts',
      'kernel/queue/append.ts',
      'kernel/queue/journal-file.ts',
      'kernel/queue/lock.ts',
      'kernel/queue/ops.ts',
      'kernel/queue/owner.ts',
      'kernel/queue/snapshot-file.ts',
      'kernel/util/atomic-write.ts',
      'kernel/util/pid.ts',
      'sdk/errors.ts',
      'sdk/file-lock.ts',
      'sdk/pid.ts',
    ]);
  });
});
