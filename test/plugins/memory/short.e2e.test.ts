/** Short and episodic memory: consolidation at 30, the 50/200/500 limits, persistence, crashes, corruption. */
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rm, tmp, waitFor } from '../../helpers.js';
import { startMemory, type MemoryHarness } from './harness.js';

let h: MemoryHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function recordN(n: number, from = 0, text = (i: number) => `step ${i} did something`) {
  for (let i = from; i < from + n; i++) await h!.memory.record({ content: text(i), actionId: `act_1_${Math.floor(i / 10)}`, step: i });
}

describe('short memory', () => {
  it('has the SPEC entry shape and caps content at 500 characters with a visible marker', async () => {
    h = await startMemory();
    const e = await h.memory.record({ content: 'q'.repeat(600), actionId: 'act_1_a', step: 3 });
    expect(e.type).toBe('short');
    expect(e.content.length).toBe(500);
    expect(e.content.endsWith('[truncated]')).toBe(true);
    expect(e.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(e.metadata).toMatchObject({ actionId: 'act_1_a', step: 3, channel: 'cli', session: 'operator' });
    expect(h.memory.counts()).toEqual({ short: 1, episodic: 0, long: 0 });
  });

  it('consolidates 30 short memories into one extractive episodic summary without a model', async () => {
    h = await startMemory();
    await recordN(29);
    await h.memory.settle();
    expect(h.memory.counts()).toMatchObject({ short: 29, episodic: 0 });
    await recordN(1, 29);
    await waitFor(() => h!.memory.counts().episodic === 1, 'one episodic summary');
    await h.memory.settle();
    expect(h.memory.counts().short).toBe(0);
    const [ep] = h.memory.list({ type: 'episodic', limit: 50 }).memories;
    expect(ep!.metadata).toMatchObject({ summarizer: 'extractive', entries: 30, session: 'operator' });
    expect(ep!.content).toContain('30 steps');
    expect(ep!.content.length).toBeLessThanOrEqual(500);
  });

  it('uses the fast model for the summary when there is one', async () => {
    const script = { chat: () => 'The user asked for thirty things; all were done.' };
    h = await startMemory({ llm: script });
    await recordN(30);
    await waitFor(() => h!.memory.counts().episodic === 1, 'one episodic summary');
    const [ep] = h.memory.list({ type: 'episodic', limit: 50 }).memories;
    expect(ep!.content).toBe('The user asked for thirty things; all were done.');
    expect(ep!.metadata.summarizer).toBe('model');
    const chats = (globalThis as any)[Symbol.for('keel.memoryTestLlm')].get(h.home).chats;
    expect(chats[0].purpose).toBe('fast');
    expect(chats[0].messages[1].content).toContain('step 29 did something');
  });

  it('keeps at most 200 episodic summaries, dropping the oldest first', async () => {
    h = await startMemory({ config: 'memoryConsolidationThreshold: 2\n' });
    for (let b = 0; b < 21; b++) {
      await Promise.all(Array.from({ length: 20 }, (_, j) => h!.memory.record({ content: `event ${b * 20 + j}` })));
    }
    await waitFor(async () => {
      await h!.memory.settle();
      return h!.memory.counts().short < 2;
    }, 'consolidation to finish');
    expect(h.memory.counts().episodic).toBe(200);
    const contents = h.memory
      .list({ type: 'episodic', limit: 500 })
      .memories.map((m) => m.content)
      .join('\n');
    expect(contents).toContain('event 419');
    expect(contents).not.toMatch(/event 0[;\n]|event 1;/);
  });

  it('gives the newest 50 memories of the session to the context', async () => {
    h = await startMemory({ config: 'memoryConsolidationThreshold: 1000\n' });
    await recordN(60, 0, (i) => `ctx-item-${String(i).padStart(3, '0')}`);
    const text = await h.memory.context({ task: 'next', actor: h.kernel.operator });
    const items = text.match(/ctx-item-\d{3}/g)!;
    expect(items.length).toBe(50);
    expect(items[0]).toBe('ctx-item-010');
    expect(items.at(-1)).toBe('ctx-item-059');
  });
});

describe('persistence', () => {
  it('survives a restart, with the journal replayed and a snapshot written at stop', async () => {
    h = await startMemory();
    await recordN(5);
    await h.restart();
    expect(h.memory.counts().short).toBe(5);
    const snap = JSON.parse(readFileSync(join(h.home, 'memory.json'), 'utf8'));
    expect(snap.short).toHaveLength(5);
    await recordN(3, 5);
    await h.restart();
    expect(h.memory.list({ type: 'short', limit: 50 }).memories.map((m) => m.content)).toContain('step 7 did something');
  });

  it('a torn last journal line is ignored; a corrupt memory.json is kept aside and reported', async () => {
    const home = tmp('keel-memory-');
    try {
      h = await startMemory({ home });
      await recordN(4);
      await h.kernel.stop();
      // Simulate a crash mid-append after a clean stop: the stop wrote the snapshot; add a journal and a torn tail.
      const good = {
        seq: 999,
        op: 'add',
        entry: {
          id: 'mem_s_x',
          type: 'short',
          content: 'journaled',
          timestamp: new Date().toISOString(),
          metadata: { actionId: '', step: 0, session: 'operator', channel: 'cli' },
        },
      };
      appendFileSync(join(home, 'memory.journal'), `${JSON.stringify(good)}\n{"seq":1000,"op":"add","entry":{"id":"torn`);
      await h.restart();
      expect(h.memory.counts().short).toBe(5);
      await h.kernel.stop();
      writeFileSync(join(home, 'memory.json'), '{"version":1,"seq":');
      appendFileSync(join(home, 'memory.journal'), '');
      await h.restart();
      const aside = readdirSync(home).filter((f) => f.startsWith('memory.json.corrupt-'));
      expect(aside).toHaveLength(1);
      expect(readFileSync(join(home, aside[0]!), 'utf8')).toBe('{"version":1,"seq":');
      const errors = h.kernel.logs
        .recent({ level: 'error' })
        .map((e) => e.message)
        .join('\n');
      expect(errors).toMatch(/memory\.json could not be read .* kept aside as .*memory\.json\.corrupt-/);
      // What the journal held since the last snapshot is still there.
      expect(h.memory.counts().short).toBeGreaterThanOrEqual(0);
    } finally {
      await h?.close();
      h = undefined;
      rm(home);
    }
  });

  it('a process killed while writing leaves a readable store holding every acknowledged record', async () => {
    const home = tmp('keel-memory-crash-');
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'crash-child.ts'), home], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const acked: string[] = [];
      let buf = '';
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.stdout.on('data', (d: Buffer) => {
        buf += d.toString();
        const lines = buf.split('\n');
        buf = lines.pop()!;
        acked.push(...lines.filter(Boolean));
      });
      await waitFor(() => acked.length >= 300 || child.exitCode !== null, 'the child to acknowledge 300 records', 20_000);
      expect(child.exitCode, err).toBeNull();
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      const ackedNow = [...acked];
      h = await startMemory({ home });
      const ids = new Set(h.memory.list({ type: 'short', limit: 1_000_000 }).memories.map((m) => m.id));
      const lost = ackedNow.filter((id) => !ids.has(id));
      expect(lost).toEqual([]);
      expect(existsSync(join(home, 'memory.journal'))).toBe(true);
    } finally {
      await h?.close();
      h = undefined;
      rm(home);
    }
  });
});

describe('memory.json while Keel runs', () => {
  it('exists from the first write and is brought up to date after about a second of quiet', async () => {
    h = await startMemory();
    const file = join(h.home, 'memory.json');
    await recordN(1);
    await h.memory.settle();
    expect(existsSync(file)).toBe(true);
    expect(JSON.parse(readFileSync(file, 'utf8')).short).toHaveLength(1);
    await recordN(3, 1);
    // Changes go to the journal first; memory.json follows once writes stop for a second, without a restart.
    await waitFor(() => JSON.parse(readFileSync(file, 'utf8')).short.length === 4, 'memory.json with all four entries', 15_000);
    expect(readFileSync(join(h.home, 'memory.journal'), 'utf8')).toBe('');
  });
});
