/**
 * Agent scenarios through the real kernel, the real agent plugin and providerA's real openai client, against the
 * loopback server that speaks OpenAI's wire protocol (test/fakes/openai-server.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startKernel, type Kernel } from '../../kernel/kernel.js';
import { LogSink } from '../../kernel/log.js';
import { chatReply, errorReply, startOpenAIFake, type ScriptedServer } from '../fakes/openai-server.js';
import { rm, skillEntry, tmp, waitFor, writePlugin } from '../helpers.js';

let kernel: Kernel | undefined;
let fake: ScriptedServer | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await kernel?.stop();
  await fake?.close();
  kernel = undefined;
  dirs.splice(0).forEach(rm);
});

async function boot(overrides: Record<string, unknown> = {}): Promise<{ k: Kernel; f: ScriptedServer }> {
  fake = await startOpenAIFake();
  const home = tmp('keel-wire-');
  dirs.push(home);
  writePlugin(`${home}/plugins`, {
    id: 'tools',
    manifest: { skills: [skillEntry('lookup', { category: 'test' }), skillEntry('note', { category: 'test' })] },
    setup: `
      ctx.skills.register('lookup', ({ text }) => 'found ' + text);
      ctx.skills.register('note', ({ text }) => 'noted ' + text);
    `,
  });
  kernel = await startKernel({
    home,
    env: {},
    watchSkills: false,
    runAgent: true,
    runner: { maxIdleMs: 100 },
    logs: new LogSink({ quiet: true }),
    overrides: { providerAApiKey: 'sk-test-wire-0123456789', providerABaseUrl: fake.url, modelName: 'gpt-4o-mini', ...overrides },
  });
  return { k: kernel, f: fake };
}

const settled = (k: Kernel, id: string) =>
  waitFor(
    () => k.queue.list().completed.find((a) => a.id === id) ?? k.queue.list().failed.find((a) => a.id === id),
    `action ${id} to settle`,
    20_000,
  );

describe('the agent over the OpenAI wire', () => {
  it('completes a task needing two skill calls, in order', async () => {
    const { k, f } = await boot();
    const calls: string[] = [];
    k.hooks.afterSkill.tapPromise('test', async (c) => {
      calls.push(c.name);
    });
    f.script(
      chatReply({ toolCalls: [{ name: 'lookup', arguments: '{"text":"flights"}' }] }),
      chatReply({ toolCalls: [{ name: 'note', arguments: '{"text":"cheapest is Tuesday"}' }] }),
      chatReply({ text: 'Booked the Tuesday flight.' }),
    );
    const a = await k.queue.push({ task: 'Find flights and note the cheapest' });
    const done = await settled(k, a.id);
    expect(done).toMatchObject({ status: 'completed', result: 'Booked the Tuesday flight.' });
    expect(calls).toEqual(['lookup', 'note']);
    expect(f.requests.filter((r) => r.url.endsWith('/chat/completions'))).toHaveLength(3);
  });

  it('recovers from an invalid tool call: the error goes back to the model as an observation', async () => {
    const { k, f } = await boot();
    f.script(
      chatReply({ toolCalls: [{ name: 'lookup', arguments: '{"nope": 1' }] }),
      chatReply({ toolCalls: [{ name: 'no_such_skill', arguments: '{}' }] }),
      chatReply({ text: 'Gave up politely.' }),
    );
    const a = await k.queue.push({ task: 'Try something odd' });
    expect(await settled(k, a.id)).toMatchObject({ status: 'completed', result: 'Gave up politely.' });
    const third = f.requests.filter((r) => r.url.endsWith('/chat/completions'))[2]!.body.messages;
    const toolMsgs = third
      .filter((m: { role: string }) => m.role === 'tool')
      .map((m: { content: string }) => m.content)
      .join('\n');
    expect(toolMsgs).toMatch(/Unknown skill "no_such_skill"/);
  });

  it('retries a 500 from the vendor and then succeeds, with one action attempt', async () => {
    const { k, f } = await boot();
    f.script(errorReply(500), chatReply({ text: 'Fine now.' }));
    const a = await k.queue.push({ task: 'Say something' });
    const done = await settled(k, a.id);
    expect(done).toMatchObject({ status: 'completed', result: 'Fine now.' });
    expect(done.metadata.retries).toBe(0);
    expect(f.requests.filter((r) => r.url.endsWith('/chat/completions'))).toHaveLength(2);
  });

  it('falls back to fallbackModelNames when the primary model fails', async () => {
    const { k, f } = await boot({ fallbackModelNames: { providerA: 'gpt-4o' } });
    f.script(errorReply(404, 'The model gpt-4o-mini does not exist'), chatReply({ text: 'Answered by the fallback.' }));
    const a = await k.queue.push({ task: 'Answer me' });
    expect(await settled(k, a.id)).toMatchObject({ status: 'completed', result: 'Answered by the fallback.' });
    const models = f.requests.filter((r) => r.url.endsWith('/chat/completions')).map((r) => r.body.model);
    expect(models).toEqual(['gpt-4o-mini', 'gpt-4o']);
  });

  it('gives memory vector recall through providerA embeddings over the wire', async () => {
    const { k, f } = await boot();
    await k.execute('update_user_profile', { info_text: 'Prefers window seats on long flights' }, k.operator);
    const r = await k.execute('recall_memory', { query: 'seat preference', limit: 3 }, k.operator);
    expect(r.success, r.result).toBe(true);
    expect(r.result).toMatch(/window seats/);
    expect(f.requests.some((q) => q.url.endsWith('/embeddings'))).toBe(true);
  });

  it('gives the knowledge store hybrid search through providerA embeddings over the wire', async () => {
    const { k, f } = await boot();
    const ingest = await k.execute(
      'rag_ingest',
      { content: '# Trips\n\nLisbon in May: book the tram tour.', source: 'notes/trips.md', format: 'markdown' },
      k.operator,
    );
    expect(ingest.success, ingest.result).toBe(true);
    const search = await k.execute('rag_search', { query: 'tram tour Lisbon' }, k.operator);
    expect(search.success, search.result).toBe(true);
    const parsed = JSON.parse(search.result) as { mode: string; results: Array<{ source: string; score: number }> };
    expect(parsed.mode).toMatch(/hybrid/);
    expect(parsed.results[0]!.source).toBe('notes/trips.md');
    expect(f.requests.filter((q) => q.url.endsWith('/embeddings')).length).toBeGreaterThanOrEqual(2);
  });
});
