/**
 * A custom skill: copy this file into ~/.keel/skills/ (or $KEEL_HOME/skills/) and it is callable as
 * `word_count` within a moment; edit and save it and the new version replaces the old one in place.
 */
import { defineSkill, Type } from 'keel/sdk';

export default defineSkill({
  name: 'word_count',
  description: 'Counts the words, lines and characters of a text.',
  category: 'text',
  isParallelSafe: true,
  parameters: Type.Object({
    text: Type.String({ description: 'The text to count' }),
    top: Type.Optional(Type.Integer({ minimum: 1, maximum: 50, description: 'Also list the N most frequent words' })),
  }),
  run({ text, top }) {
    const words = text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];
    const result: { words: number; lines: number; characters: number; frequent?: Array<[string, number]> } = {
      words: words.length,
      lines: text === '' ? 0 : text.split(/\r?\n/).length,
      characters: [...text].length,
    };
    if (top) {
      const counts = new Map<string, number>();
      for (const w of words) counts.set(w, (counts.get(w) ?? 0) + 1);
      // Ties are broken alphabetically so the answer does not depend on the text's order.
      result.frequent = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, top);
    }
    return result;
  },
});
