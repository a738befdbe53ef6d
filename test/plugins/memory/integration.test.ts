/** Memory beside the real agent plugin (no provider keys), and a second Keel process on the same home. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rm, tmp, waitFor } from '../../helpers.js';
import { startMemory, type MemoryHarness } from './harness.js';

const open: MemoryHarness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

describe('memory with the built-in agent and no provider key', () => {
  it('summarises extractively and recalls by keyword', async () => {
    const h = await startMemory({ withAgent: true, config: 'memoryConsolidationThreshold: 3\n' });
    open.push(h);
    expect(h.kernel.host.status('agent')?.state).toBe('loaded');
    for (const t of ['alpha task one', 'alpha task two', 'alpha task three']) await h.memory.record({ content: t });
    await waitFor(() => h.memory.counts().episodic === 1, 'a summary');
    expect(h.memory.list({ type: 'episodic', limit: 1 }).memories[0]!.metadata.summarizer).toBe('extractive');
    const { results } = JSON.parse((await h.run('recall_memory', { query: 'alpha' })).result);
    expect(results).toMatch(/keyword search/);
    expect(results).toContain('alpha task one');
  });
});

describe('two Keel processes on one home', () => {
  it("the reader sees the writer's records and its stop never drops them", async () => {
    const home = tmp('keel-memory-two-');
    try {
      const writer = await startMemory({ home });
      const reader = await startMemory({ home });
      await writer.memory.record({ content: 'first from writer' });
      expect(reader.memory.list({ type: 'short', limit: 10 }).memories.map((m) => m.content)).toEqual(['first from writer']);
      // The writer acknowledges another record the reader never looked at; then the reader stops.
      await writer.memory.record({ content: 'second from writer' });
      await reader.close();
      // The acknowledged record must still be on disk now, whatever happens to the writer next (a crash).
      const onDisk = ['memory.json', 'memory.journal']
        .map((f) => (existsSync(join(home, f)) ? readFileSync(join(home, f), 'utf8') : ''))
        .join('');
      expect(onDisk).toContain('second from writer');
      await writer.close();
      const again = await startMemory({ home });
      open.push(again);
      expect(again.memory.counts().short).toBe(2);
    } finally {
      for (const h of open.splice(0)) await h.close();
      rm(home);
    }
  });
});
