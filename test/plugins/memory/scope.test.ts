/** Recall (keyword and vector), scoping by admin rights and session, GET /api/memory's list, contacts, hooks. */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Actor } from '../../../sdk/index.js';
import { waitFor } from '../../helpers.js';
import { conceptEmbed, startMemory, user, type MemoryHarness } from './harness.js';

let h: MemoryHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const ADMIN = user('chatA', '111');
const STRANGER = user('chatA', '222');
const OTHER = user('chatC', '333');
const CONFIG = 'adminUsers:\n  chatA: ["111"]\n';

async function seed() {
  await h!.memory.record({ content: 'operator planned the rocket launch', actor: h!.kernel.operator });
  await h!.memory.record({ content: 'stranger asked about the rocket price', actor: STRANGER });
  await h!.memory.record({ content: 'other person asked about rocket colours', actor: OTHER });
  await h!.run('update_journal', { entry_text: 'Secret rocket journal entry' });
  await h!.run('update_learning', { topic: 'Rocket science', knowledge_content: 'Rockets need fuel.' });
  await h!.run('update_user_profile', { info_text: 'Owner likes rocket models' });
}

describe('recall_memory without embeddings', () => {
  it('falls back to keyword search ranked by recency, each line with timestamp, kind, channel and score', async () => {
    h = await startMemory({ config: CONFIG });
    await h.memory.record({ content: 'deploy the rocket to the pad' });
    await new Promise((r) => setTimeout(r, 5));
    await h.memory.record({ content: 'rocket launched, deploy finished' });
    await h.memory.record({ content: 'unrelated gardening notes' });
    const r = await h.run('recall_memory', { query: 'rocket deploy' });
    expect(r.success, r.result).toBe(true);
    const { results } = JSON.parse(r.result) as { results: string };
    expect(results).toMatch(/keyword search, ranked by recency; no embedding provider/);
    const lines = results.split('\n').slice(1);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^1\. \[\d{4}-\d\d-\d\dT[\d:.]+Z\] short \| cli \| score 1\.000 \| rocket launched, deploy finished$/);
    expect(lines[1]).toContain('deploy the rocket to the pad');
    expect(JSON.parse((await h.run('recall_memory', { query: 'rocket', limit: 1 })).result).results.split('\n')).toHaveLength(2);
  });

  it('with an llm that cannot embed, still keyword search', async () => {
    h = await startMemory({ llm: {} });
    await h.memory.record({ content: 'the cat sat on the mat' });
    const { results } = JSON.parse((await h.run('recall_memory', { query: 'cat' })).result);
    expect(results).toMatch(/keyword search/);
    expect(results).toContain('the cat sat');
  });
});

describe('recall_memory with embeddings', () => {
  const embed = conceptEmbed;

  it('ranks by vector similarity and searches short, episodic and long memory', async () => {
    h = await startMemory({ llm: { embed, chat: () => 'rain is likely in autumn' } });
    await h.memory.record({ content: 'I drive an automobile to work' });
    await h.memory.record({ content: 'cooking spaghetti tonight' });
    await h.run('update_learning', { topic: 'Weather', knowledge_content: 'rain is likely in autumn' });
    const { results } = JSON.parse((await h.run('recall_memory', { query: 'car', limit: 2 })).result);
    expect(results).toMatch(/vector similarity and keyword matches, ranked by relevance/);
    const lines = results.split('\n').slice(1);
    expect(lines[0]).toMatch(/short \| cli \| score 0\.59\d \| I drive an automobile to work/);
    const weather = JSON.parse((await h.run('recall_memory', { query: 'weather', limit: 1 })).result).results;
    expect(weather).toMatch(/long \| LEARNING\.md \| score 0\.9\d\d \| Weather: rain is likely/);
    // Vectors are kept: a second recall embeds only the query.
    const script = (globalThis as any)[Symbol.for('keel.memoryTestLlm')].get(h.home);
    const before = script.embeds.length;
    await h.run('recall_memory', { query: 'spaghetti' });
    expect(script.embeds.slice(before)).toEqual([1]);
  });
});

describe('scoping', () => {
  it('a non-admin recalls only their own session and never the journal, learning notes or the profile', async () => {
    h = await startMemory({ config: CONFIG });
    await seed();
    const mine = JSON.parse((await h.run('recall_memory', { query: 'rocket', limit: 20 }, STRANGER)).result).results as string;
    expect(mine).toContain('stranger asked about the rocket price');
    expect(mine).not.toMatch(/operator planned|other person|journal|Rockets need fuel|Owner likes/);
    // The agent working for the stranger is the stranger.
    const agent: Actor = { kind: 'agent', channel: 'autonomy', onBehalfOf: STRANGER };
    const viaAgent = JSON.parse((await h.run('recall_memory', { query: 'rocket', limit: 20 }, agent)).result).results as string;
    expect(viaAgent).not.toMatch(/operator planned|journal|Rockets need fuel/);
    // An admin on chatA sees everything.
    const admin = JSON.parse((await h.run('recall_memory', { query: 'rocket', limit: 20 }, ADMIN)).result).results as string;
    for (const s of [
      'operator planned',
      'stranger asked',
      'other person',
      'Secret rocket journal',
      'Rockets need fuel',
      'Owner likes rocket',
    ])
      expect(admin).toContain(s);
    // The same id on another channel is not an admin there.
    expect(JSON.parse((await h.run('recall_memory', { query: 'journal' }, user('chatC', '111'))).result).results).not.toContain('Secret');
  });

  it('a non-admin cannot write the journal or learning notes; their profile facts go to their contact profile', async () => {
    h = await startMemory({ config: CONFIG });
    const j = await h.run('update_journal', { entry_text: 'x' }, STRANGER);
    expect(j.success).toBe(false);
    expect(j.result).toMatch(/JOURNAL\.md .*non-admin/);
    expect((await h.run('update_learning', { topic: 't', knowledge_content: 'c' }, STRANGER)).success).toBe(false);
    const p = await h.run('update_user_profile', { info_text: 'Prefers tea' }, user('chatB', '4915@s.whatsapp.net'));
    expect(p.success, p.result).toBe(true);
    expect(existsSync(join(h.home, 'USER.md'))).toBe(false);
    const contact = JSON.parse(readFileSync(join(h.home, 'contacts', '4915@s.whatsapp.net.json'), 'utf8'));
    expect(contact.facts[0].text).toBe('Prefers tea');
  });

  it('context: own session only; USER.md for admins only; a chatB contact gets their profile', async () => {
    h = await startMemory({ config: CONFIG });
    await seed();
    const stranger = await h.memory.context({ task: 't', actor: STRANGER });
    expect(stranger).toContain('stranger asked');
    expect(stranger).not.toMatch(/operator planned|Owner likes/);
    const op = await h.memory.context({ task: 't', actor: h.kernel.operator });
    expect(op).toContain('operator planned');
    expect(op).not.toContain('stranger asked');
    expect(op).toContain('Owner likes rocket models');
    const jid = '4917@s.whatsapp.net';
    await h.kernel.hooks.messageIn.promise({
      channel: 'chatB',
      messageId: 'm1',
      chatId: jid,
      userId: jid,
      text: 'hello there',
      metadata: { pushName: 'Ann' },
    });
    const ann = await h.memory.context({ task: 't', actor: user('chatB', jid) });
    expect(ann).toMatch(/Contact Ann \(chatB 4917@s\.whatsapp\.net\): 1 messages/);
    expect(ann).toContain('"hello there"');
  });

  it('sessionScope per-peer with identityLinks shares one session across channels', async () => {
    h = await startMemory({ config: `${CONFIG}sessionScope: per-peer\nidentityLinks:\n  "chatA:222": "chatC:333"\n` });
    await h.memory.record({ content: 'linked rocket memory', actor: STRANGER });
    const r = JSON.parse((await h.run('recall_memory', { query: 'rocket' }, OTHER)).result).results;
    expect(r).toContain('linked rocket memory');
    expect(JSON.parse((await h.run('recall_memory', { query: 'rocket' }, user('chatD', 'U9'))).result).results).not.toContain('linked');
  });
  it('without the kernel:policy capability nobody is an admin and nothing is recorded under a guessed session (fail closed)', async () => {
    h = await startMemory({ config: CONFIG });
    await seed();
    const use = h.kernel.registry.use.bind(h.kernel.registry);
    vi.spyOn(h.kernel.registry, 'use').mockImplementation(((cap: string) =>
      cap === 'kernel:policy' ? undefined : use(cap)) as typeof use);
    // Not an admin, and no session to narrow the search to: the recall is refused rather than widened.
    const admin = await h.run('recall_memory', { query: 'rocket', limit: 20 }, ADMIN);
    expect(admin.success).toBe(false);
    expect(admin.result).toMatch(/kernel:policy/);
    expect(admin.result).not.toMatch(/operator planned|stranger asked|Secret rocket journal|Rockets need fuel|Owner likes/);
    await expect(h.memory.record({ content: 'orphan', actor: STRANGER })).rejects.toThrow(/kernel:policy/);
    expect((await h.run('update_journal', { entry_text: 'x' }, ADMIN)).success).toBe(false);
  });
});

describe('memory capability', () => {
  it('list serves GET /api/memory: type, limit, search, total; long entries are the ## sections', async () => {
    h = await startMemory();
    await h.memory.record({ content: 'alpha one' });
    await h.memory.record({ content: 'beta two' });
    await h.run('update_user_profile', { info_text: 'Prefers alpha builds' });
    await h.run('update_journal', { entry_text: 'alpha day' });
    const all = h.memory.list({ limit: 50 });
    expect(all.total).toBe(2 + 3 + 1);
    const long = h.memory.list({ type: 'long', limit: 50 });
    const sections = long.memories.map((m) => String(m.metadata.section)).sort();
    expect(sections.slice(1)).toEqual(['Constraints', 'Core Identity', 'Preferences']);
    expect(sections[0]).toMatch(/^\d{4}-\d\d-\d\d$/);
    expect(long.memories.every((m) => m.type === 'long' && m.content.length <= 500)).toBe(true);
    const alpha = h.memory.list({ limit: 1, search: 'ALPHA' });
    expect(alpha.total).toBe(3);
    expect(alpha.memories).toHaveLength(1);
    expect(h.memory.counts()).toEqual({ short: 2, episodic: 0, long: 4 });
  });

  it("records the agent's steps from the hooks", async () => {
    h = await startMemory();
    const action = await h.kernel.queue.push({ task: 'water the plants', source: 'cli' });
    await h.kernel.hooks.actionStarted.promise(action);
    h.kernel.hooks.observation.call({ actionId: action.id, skill: 'http_fetch', result: 'soil is dry' });
    await h.kernel.hooks.actionSettled.promise(action, { status: 'completed', detail: 'watered' });
    await waitFor(() => h!.memory.counts().short === 3, 'three short memories');
    const items = h.memory
      .list({ type: 'short', limit: 10 })
      .memories.sort((a, b) => (a.metadata.step as number) - (b.metadata.step as number));
    expect(items.map((m) => [m.content, m.metadata.step, m.metadata.actionId])).toEqual([
      ['Task: water the plants', 0, action.id],
      ['http_fetch: soil is dry', 1, action.id],
      ['Result (completed): watered', 2, action.id],
    ]);
  });

  it('reset() clears memory and the long files', async () => {
    h = await startMemory();
    await h.memory.record({ content: 'to forget' });
    await h.run('update_journal', { entry_text: 'forget me' });
    await h.memory.reset();
    expect(h.memory.counts()).toEqual({ short: 0, episodic: 0, long: 0 });
    expect(existsSync(join(h.home, 'JOURNAL.md'))).toBe(false);
  });
});
