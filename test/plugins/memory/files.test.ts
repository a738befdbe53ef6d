/** Long memory files: exact shapes after each skill, manual edits kept, secrets refused, the 3000 caps. */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { localDate, LEARNING_INTRO } from '../../../plugins/memory/src/long-files.js';
import { startMemory, type MemoryHarness } from './harness.js';

let h: MemoryHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});
const read = (f: string) => readFileSync(join(h!.home, f), 'utf8');

describe('USER.md', () => {
  it('is created on first use with the SPEC shape and each fact lands in its section', async () => {
    h = await startMemory();
    expect(existsSync(join(h.home, 'USER.md'))).toBe(false);
    for (const info_text of [
      'Name is Ada Lovelace',
      'Prefers short answers',
      'Is allergic to peanuts',
      'Works as a nurse in Oslo',
      'Likes jazz',
    ]) {
      const r = await h.run('update_user_profile', { info_text });
      expect(r.success, r.result).toBe(true);
    }
    expect(read('USER.md')).toBe(
      '# User Profile\n\n## Core Identity\n\n- Name is Ada Lovelace\n- Works as a nurse in Oslo\n\n## Preferences\n\n- Prefers short answers\n- Likes jazz\n\n## Constraints\n\n- Is allergic to peanuts\n',
    );
    expect((await h.run('update_user_profile', { info_text: 'Never call before 9am' })).result).toContain('Constraints');
  });

  it("keeps a person's manual edits", async () => {
    h = await startMemory();
    const manual =
      '# User Profile\n\nHand-written note: keep me.\n\n## Core Identity\n\n- Name is Bob\n<!-- my comment -->\n\n## Hobbies\n\n- chess (added by hand)\n\n## Preferences\n\n- Tea, not coffee\n\n## Constraints\n';
    writeFileSync(join(h.home, 'USER.md'), manual);
    await h.run('update_user_profile', { info_text: 'Prefers email over calls' });
    await h.run('update_user_profile', { info_text: 'Lives in Lyon' });
    await h.run('update_user_profile', { info_text: 'Cannot travel in March' });
    expect(read('USER.md')).toBe(
      '# User Profile\n\nHand-written note: keep me.\n\n## Core Identity\n\n- Name is Bob\n<!-- my comment -->\n- Lives in Lyon\n\n## Hobbies\n\n- chess (added by hand)\n\n## Preferences\n\n- Tea, not coffee\n- Prefers email over calls\n\n## Constraints\n\n- Cannot travel in March\n',
    );
    // A section a person deleted comes back at the end; everything else stays.
    writeFileSync(join(h.home, 'USER.md'), '# User Profile\n\n## Core Identity\n\n- Name is Bob\n');
    await h.run('update_user_profile', { info_text: 'Hates spam' });
    expect(read('USER.md')).toBe('# User Profile\n\n## Core Identity\n\n- Name is Bob\n\n## Preferences\n\n- Hates spam\n');
  });

  it('refuses passwords, keys and tokens with a clear message and writes nothing', async () => {
    h = await startMemory();
    for (const info_text of [
      'My password is hunter2!',
      'email password: Tr0ub4dor&3',
      'API key sk-proj-abcdefghijklmnopqrstuvwx',
      'github token ghp_abcdefghijklmnopqrstuvwxyz0123',
      'aws AKIAIOSFODNN7EXAMPLE',
      'PIN = 4711',
    ]) {
      const r = await h.run('update_user_profile', { info_text });
      expect(r.success, info_text).toBe(false);
      expect(r.result).toMatch(/Not stored: .*(password|key|token)/i);
    }
    expect(existsSync(join(h.home, 'USER.md'))).toBe(false);
    expect((await h.run('update_user_profile', { info_text: 'Prefers not to be asked for passwords' })).success).toBe(true);
  });
});

describe('LEARNING.md', () => {
  it('without a model stores the given content (capped at 3000) under ## <Topic>', async () => {
    h = await startMemory();
    const r = await h.run('update_learning', { topic: 'Rust lifetimes', knowledge_content: 'Lifetimes tie references to scopes.' });
    expect(r.success, r.result).toBe(true);
    await h.run('update_learning', { topic: 'Rust lifetimes', knowledge_content: 'Elision rules cover common cases.' });
    await h.run('update_learning', { topic: 'Tides', knowledge_content: 'x'.repeat(5000) });
    const text = read('LEARNING.md');
    const tides = text.split('## Tides\n\n')[1]!.trimEnd();
    expect(tides.length).toBe(3000);
    expect(tides.slice(-20)).toContain('[truncated]');
    expect(text).toBe(
      `# Agent Learning Base\n\n${LEARNING_INTRO}\n\n## Rust lifetimes\n\nLifetimes tie references to scopes.\n\nElision rules cover common cases.\n\n## Tides\n\n${tides}\n`,
    );
  });

  it('the fast model distils at most 3000 characters of input; its entry is capped at 3000', async () => {
    const llm = { chat: () => `- fact one\n- ${'y'.repeat(4000)}` } as const;
    h = await startMemory({ llm: { ...llm } });
    const r = await h.run('update_learning', { topic: 'Moths', knowledge_content: `${'a'.repeat(3000)}BEYOND-THE-CAP and more` });
    expect(r.success, r.result).toBe(true);
    expect(r.result).toContain('fast model');
    const script = (globalThis as any)[Symbol.for('keel.memoryTestLlm')].get(h.home);
    const call = script.chats.at(-1);
    expect(call.purpose).toBe('fast');
    expect(call.messages.at(-1).content).not.toContain('BEYOND');
    const body = read('LEARNING.md').split('## Moths\n\n')[1]!.trimEnd();
    expect(body.startsWith('- fact one')).toBe(true);
    expect(body.length).toBe(3000);
  });

  it('without content researches with the model, and without a model says so clearly', async () => {
    h = await startMemory();
    const r = await h.run('update_learning', { topic: 'Comets' });
    expect(r.success).toBe(false);
    expect(r.result).toMatch(/no knowledge_content was given.*no model is configured/);
    expect(existsSync(join(h.home, 'LEARNING.md'))).toBe(false);
    await h.close();
    h = await startMemory({ llm: { chat: (req) => (req.messages[1]!.content.includes('Comets') ? '- Comets are icy bodies' : 'wrong') } });
    const ok = await h.run('update_learning', { topic: 'Comets' });
    expect(ok.success, ok.result).toBe(true);
    expect(read('LEARNING.md')).toContain('## Comets\n\n- Comets are icy bodies\n');
  });
});

describe('JOURNAL.md', () => {
  it("writes today's ## YYYY-MM-DD section and appends to it", async () => {
    h = await startMemory();
    await h.run('update_journal', { entry_text: 'Started the memory plugin.' });
    await h.run('update_journal', { entry_text: 'Finished the tests.' });
    const today = localDate();
    expect(today).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(read('JOURNAL.md')).toBe(`# Agent Journal\n\n## ${today}\n\nStarted the memory plugin.\n\nFinished the tests.\n`);
    // An older day written by hand stays; today's section is found again.
    writeFileSync(join(h.home, 'JOURNAL.md'), `# Agent Journal\n\n## 2020-01-01\n\nOld day.\n`);
    await h.run('update_journal', { entry_text: 'New day.' });
    expect(read('JOURNAL.md')).toBe(`# Agent Journal\n\n## 2020-01-01\n\nOld day.\n\n## ${today}\n\nNew day.\n`);
  });
});
