/**
 * The pure parts of custom skills: which files count, the plugin id, and the export check that runs before any swap.
 */
import Type from 'typebox';
import { describe, expect, it } from 'vitest';
import { customSkillId, isSkillFile, manifestFor } from '../../kernel/plugins/custom-skills.js';

const good = { name: 'shout', description: 'Upper-cases text', parameters: Type.Object({ text: Type.String() }), run: () => 'x' };

describe('custom skill files', () => {
  it('counts .ts .mts .js .mjs files and ignores declarations, dotfiles and other files', () => {
    for (const f of ['a.ts', 'a.mts', 'a.js', 'a.mjs']) expect(isSkillFile(f)).toBe(true);
    for (const f of ['a.d.ts', '.a.ts', '#a.ts#', 'a.json', 'a.ts.swp', 'a.ts~', 'README.md']) expect(isSkillFile(f)).toBe(false);
  });

  it('derives a lowercase plugin id that fits the manifest id pattern', () => {
    expect(customSkillId('/h/skills/Word-Count.ts')).toBe('skill-word-count');
    expect(customSkillId('my skill (2).js')).toBe('skill-my-skill-2-');
    const long = customSkillId(`${'x'.repeat(100)}.ts`);
    expect(long).toHaveLength(64);
    expect(long).toMatch(/^[A-Za-z][A-Za-z0-9_.:-]{0,63}$/);
  });
});

describe('manifestFor', () => {
  it('synthesizes a skill manifest with category, flags and version', () => {
    const { manifest } = manifestFor('/h/skills/shout.ts', { ...good, isDangerous: true, adminOnly: true, version: '2.0.1' });
    expect(manifest).toMatchObject({ id: 'skill-shout', version: '2.0.1', kind: 'skill', description: 'Upper-cases text' });
    expect(manifest.skills).toEqual([
      {
        name: 'shout',
        description: 'Upper-cases text',
        category: 'custom',
        parameters: good.parameters,
        isDangerous: true,
        adminOnly: true,
      },
    ]);
    expect(manifestFor('/h/skills/shout.ts', { ...good, category: 'text' }).manifest.skills![0]!.category).toBe('text');
  });

  it.each([
    ['no default export', undefined, /no default export/],
    ['missing run', { ...good, run: undefined }, /"run" must be a function/],
    ['missing name', { ...good, name: '' }, /"name" must be/],
    ['missing description', { ...good, description: undefined }, /"description" must be/],
    ['non-object parameters', { ...good, parameters: Type.String() }, /"parameters" must be an object schema/],
    ['non-boolean flag', { ...good, isDeep: 'yes' }, /"isDeep" must be true or false/],
    ['bad skill name', { ...good, name: 'has space' }, /Invalid plugin manifest/],
    ['bad version', { ...good, version: 'latest' }, /Invalid plugin manifest/],
  ])('refuses %s with a message naming the file', (_label, value, message) => {
    expect(() => manifestFor('/h/skills/shout.ts', value)).toThrow(message);
    expect(() => manifestFor('/h/skills/shout.ts', value)).toThrow(/shout\.ts/);
  });
});
