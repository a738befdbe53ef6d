/**
 * Idle sessions (memorySessionIdleHours): a session whose newest short memory is older than the idle time has its
 * short memories consolidated into an episodic summary, as a full session is, so short memory does not keep up to
 * threshold-1 entries of every session that ever spoke. The sweep reads an injectable clock (`memory.now`).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rm, tmp, waitFor } from '../../helpers.js';
import { startMemory, user, type MemoryHarness } from './harness.js';

let h: MemoryHarness | undefined;
let home: string | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  if (home) rm(home);
  home = undefined;
});

const HOUR = 3_600_000;

/** A home whose memory.json holds `n` short memories of each given session, written `hoursAgo` hours ago. */
function homeWith(sessions: string[], n: number, hoursAgo = 48, config = ''): string {
  const dir = tmp('keel-memory-idle-');
  const t0 = Date.now() - hoursAgo * HOUR;
  const short = sessions.flatMap((session, s) =>
    Array.from({ length: n }, (_, i) => {
      const [channel, userId] = session.split(':');
      return {
        id: `mem_s_old_${s}_${i}`,
        type: 'short',
        content: `Task: ${session} asked about tulip bulbs, step ${i}`,
        timestamp: new Date(t0 + s * 1000 + i * 10).toISOString(),
        metadata: { actionId: `act_old_${s}`, step: i, channel, session, userId, kind: 'task' },
      };
    }),
  );
  writeFileSync(join(dir, 'memory.json'), JSON.stringify({ version: 1, seq: 0, short, episodic: [], vectors: {} }));
  if (config) writeFileSync(join(dir, 'keel.config.yaml'), config);
  return dir;
}

const short = () => h!.memory.list({ type: 'short', limit: 10_000 }).memories;
const episodic = () => h!.memory.list({ type: 'episodic', limit: 10_000 }).memories;
const infoLines = () =>
  h!.kernel.logs
    .recent({ level: 'info' })
    .map((e) => e.message)
    .filter((m) => m.includes('idle for'));

describe('idle sessions are consolidated (memorySessionIdleHours)', () => {
  it("an idle session's short memories become one episodic summary; an active session's stay; a restart keeps it", async () => {
    home = homeWith(['chatA:alice'], 5);
    h = await startMemory({ home });
    for (let i = 0; i < 3; i++) await h.memory.record({ content: `operator step ${i}` });
    expect(h.memory.counts()).toMatchObject({ short: 8, episodic: 0 });

    expect(await h.memory.sweepIdle()).toEqual({ sessions: 1, entries: 5 });

    expect(short().map((e) => e.metadata.session)).toEqual(['operator', 'operator', 'operator']);
    const eps = episodic();
    expect(eps).toHaveLength(1);
    expect(eps[0]!.metadata).toMatchObject({ session: 'chatA:alice', userId: 'alice', channel: 'chatA', entries: 5 });
    expect(eps[0]!.metadata.summarizer).toBe('extractive');
    expect(eps[0]!.content).toContain('tulip bulbs');
    // Gone from the keyword index too: only the summary matches alice's words.
    expect([...h.memory.index.match(['tulip']).keys()]).toEqual([eps[0]!.id]);
    expect(infoLines()).toEqual(['memory: 5 short memories of 1 session(s) idle for 24 h consolidated into episodic summaries.']);

    // A second sweep finds nothing more; the operator's session is active.
    expect(await h.memory.sweepIdle()).toEqual({ sessions: 0, entries: 0 });

    await h.restart();
    expect(h.memory.counts()).toMatchObject({ short: 3, episodic: 1 });
    expect(episodic()[0]!.id).toBe(eps[0]!.id);
    expect(short().every((e) => e.metadata.session === 'operator')).toBe(true);
  });

  it('follows the clock: memories recorded now are consolidated once the idle time has passed; one memory alone is kept verbatim', async () => {
    h = await startMemory();
    const bob = user('chatA', 'bob');
    const carol = user('chatA', 'carol');
    await h.memory.record({ content: 'Task: plan the trip. Then book the train.', actor: bob });
    await h.memory.record({ content: 'Result (completed): booked the 9:15 train', actor: bob });
    const long = 'Task: remember that the garage code changes monthly. It is written on the fridge, not in the car.';
    await h.memory.record({ content: long, actor: carol });
    await h.memory.record({ content: 'operator step', actor: h.kernel.operator });

    h.memory.now = () => Date.now() + 23 * HOUR;
    expect(await h.memory.sweepIdle()).toEqual({ sessions: 0, entries: 0 });
    expect(h.memory.counts()).toMatchObject({ short: 4, episodic: 0 });

    h.memory.now = () => Date.now() + 25 * HOUR;
    expect(await h.memory.sweepIdle()).toEqual({ sessions: 3, entries: 4 });
    expect(h.memory.counts()).toMatchObject({ short: 0, episodic: 3 });
    const bySession = new Map(episodic().map((e) => [e.metadata.session, e]));
    expect(bySession.get('chatA:bob')!.metadata).toMatchObject({ entries: 2 });
    expect(bySession.get('chatA:carol')!.content).toBe(long);
    expect(bySession.get('chatA:carol')!.metadata).toMatchObject({ entries: 1, userId: 'carol' });
    // The context of the idle user now comes from the summary.
    const ctx = await h.memory.context({ task: 'x', actor: bob });
    expect(ctx).toMatch(/Earlier \(episodic summaries\):\n- .*2 steps .*plan the trip/);
  });

  it('0 turns it off', async () => {
    home = homeWith(['chatA:alice', 'chatA:bob'], 4, 24 * 365, 'memorySessionIdleHours: 0\n');
    h = await startMemory({ home });
    h.memory.now = () => Date.now() + 1000 * HOUR;
    expect(await h.memory.sweepIdle()).toEqual({ sessions: 0, entries: 0 });
    expect(h.memory.counts()).toMatchObject({ short: 8, episodic: 0 });
    expect(infoLines()).toEqual([]);
  });

  it('runs on its own after a delay and then again at every period, in the process that runs the agent, until stopped', async () => {
    home = homeWith(['chatA:alice'], 3);
    h = await startMemory({ home });
    // The plugin armed the sweep a minute after its start; shorter periods here. This kernel runs no agent (a
    // separate gateway, say): its timer leaves memory to the agent's process.
    h.memory.startIdleSweep(5, 20);
    await new Promise((r) => setTimeout(r, 150));
    expect(h.memory.counts()).toMatchObject({ short: 3, episodic: 0 });
    h.memory.sweepsHere = () => true;
    h.memory.startIdleSweep(10, 40);
    await waitFor(() => h!.memory.counts().episodic === 1, 'the first sweep');
    expect(h.memory.counts().short).toBe(0);
    await h.memory.record({ content: 'later step', actor: user('chatA', 'dave') });
    h.memory.now = () => Date.now() + 25 * HOUR;
    await waitFor(() => h!.memory.counts().episodic === 2, 'a later sweep');
    expect(h.memory.counts().short).toBe(0);
    h.memory.stopIdleSweep();
    await h.memory.settle();
    await h.memory.record({ content: 'after the stop', actor: user('chatA', 'erin') });
    await new Promise((r) => setTimeout(r, 150));
    expect(h.memory.counts()).toMatchObject({ short: 1, episodic: 2 });
  });

  it('takes turns with threshold consolidations: one consolidation at a time', async () => {
    home = homeWith(['chatA:a', 'chatA:b', 'chatA:c', 'chatA:d'], 3, 48, 'memoryConsolidationThreshold: 3\n');
    let active = 0;
    let most = 0;
    h = await startMemory({
      home,
      llm: {
        chat: async () => {
          most = Math.max(most, ++active);
          await new Promise((r) => setTimeout(r, 20));
          active--;
          return 'a summary';
        },
      },
    });
    const sweep = h.memory.sweepIdle();
    // Meanwhile the operator's session reaches the threshold twice.
    for (let i = 0; i < 6; i++) await h.memory.record({ content: `operator step ${i}` });
    expect(await sweep).toEqual({ sessions: 4, entries: 12 });
    await h.memory.settle();
    expect(most).toBe(1);
    expect(h.memory.counts()).toMatchObject({ short: 0, episodic: 6 });
    const sessions = episodic()
      .map((e) => e.metadata.session)
      .sort();
    expect(sessions).toEqual(['chatA:a', 'chatA:b', 'chatA:c', 'chatA:d', 'operator', 'operator']);
  });

  it('asks the model only for an idle conversation, not for a user who wrote once or twice', async () => {
    home = homeWith(['chatA:once', 'chatA:talker'], 2, 48);
    // The talker had a real conversation: 12 short memories.
    const more = homeWith(['chatA:talker'], 12, 48);
    const { readFileSync } = await import('node:fs');
    const a = JSON.parse(readFileSync(join(home, 'memory.json'), 'utf8'));
    const b = JSON.parse(readFileSync(join(more, 'memory.json'), 'utf8'));
    type Entry = { id: string; metadata: { session: string } };
    a.short = [
      ...a.short.filter((e: Entry) => e.metadata.session === 'chatA:once'),
      ...b.short.map((e: Entry) => ({ ...e, id: `${e.id}_talker` })),
    ];
    writeFileSync(join(home, 'memory.json'), JSON.stringify(a));
    rm(more);
    const asked: string[] = [];
    h = await startMemory({
      home,
      llm: {
        chat: async (req: { messages: Array<{ content: string }> }) => {
          asked.push(req.messages.map((m) => m.content).join('\n'));
          return 'The talker planned the tulip beds.';
        },
      },
    });
    expect(await h.memory.sweepIdle()).toEqual({ sessions: 2, entries: 14 });
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('chatA:talker');
    const bySession = new Map(episodic().map((e) => [e.metadata.session, e]));
    expect(bySession.get('chatA:talker')!.content).toContain('The talker planned the tulip beds.');
    expect(bySession.get('chatA:once')!.metadata).toMatchObject({ entries: 2 });
    expect(bySession.get('chatA:once')!.content).toContain('chatA:once asked about tulip bulbs');
  });
});
