/**
 * Chunking respects each format: markdown headings, csv rows with the header, jsonl records, json entries,
 * code blocks, text paragraphs; chunks stay under MAX characters; long prose overlaps.
 */
import { describe, expect, it } from 'vitest';
import { MAX, chunk, csvRecords, formatFromName } from '../../../plugins/knowledge/src/chunk.js';

const sentence = (i: number) => `Sentence number ${i} talks about topic ${i % 7} in some detail. `;
const prose = (n: number, from = 0) => Array.from({ length: n }, (_, i) => sentence(i + from)).join('');

describe('chunking', () => {
  it('text: paragraphs are kept whole and packed; a long paragraph is cut with overlap', () => {
    const paras = ['Alpha paragraph.', 'Beta paragraph.', 'Gamma paragraph.'];
    expect(chunk(paras.join('\n\n'), 'text')).toEqual([paras.join('\n\n')]);
    const long = prose(60); // about 3,800 characters, one paragraph
    const parts = chunk(long, 'text');
    expect(parts.length).toBeGreaterThan(2);
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(MAX);
    // overlap: each piece after the first starts with words that end the previous one
    for (let i = 1; i < parts.length; i++) expect(parts[i - 1]!.includes(parts[i]!.slice(0, 40))).toBe(true);
    // nothing lost
    for (let i = 0; i < 60; i++) expect(parts.some((p) => p.includes(`Sentence number ${i} `))).toBe(true);
  });

  it('markdown: one section per heading, each chunk carries its heading path, fences are not headings', () => {
    const md = [
      '# Guide',
      'Intro text.',
      '## Install',
      prose(20),
      '## Configure',
      '```sh',
      '# this is a shell comment, not a heading',
      'keel config set x y',
      '```',
      '### Advanced',
      prose(25, 100),
    ].join('\n\n');
    const parts = chunk(md, 'markdown');
    expect(parts.length).toBeGreaterThan(2);
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(MAX);
    const install = parts.filter((p) => p.includes('Sentence number 3 '));
    expect(install[0]).toContain('# Guide > ## Install\n\nSentence number 0 ');
    const adv = parts.filter((p) => p.includes('Sentence number 110 '));
    expect(adv[0]!.startsWith('# Guide > ## Configure > ### Advanced')).toBe(true);
    expect(parts.some((p) => p.startsWith('# this is a shell comment'))).toBe(false);
    expect(parts.find((p) => p.includes('keel config set'))).toContain('# this is a shell comment');
  });

  it('csv: whole rows, every chunk starts with the header, quoted newlines stay in their row', () => {
    const header = 'id,name,notes';
    const rows = Array.from({ length: 80 }, (_, i) => `${i},name ${i},"note ${i} with, comma${i === 5 ? '\nand a second line' : ''}"`);
    const parts = chunk([header, ...rows].join('\n'), 'csv');
    expect(parts.length).toBeGreaterThan(1);
    for (const p of parts) {
      expect(p.startsWith(`${header}\n`)).toBe(true);
      expect(p.length).toBeLessThanOrEqual(MAX);
    }
    const body = parts.flatMap((p) => csvRecords(p).slice(1));
    expect(body).toEqual(rows);
  });

  it('jsonl: whole records, packed, none lost', () => {
    const recs = Array.from({ length: 50 }, (_, i) => JSON.stringify({ i, text: `record ${i} `.repeat(5) }));
    const parts = chunk(recs.join('\n'), 'jsonl');
    expect(parts.length).toBeGreaterThan(1);
    const lines = parts.flatMap((p) => p.split('\n'));
    expect(lines).toEqual(recs);
    for (const l of lines) expect(() => JSON.parse(l)).not.toThrow();
  });

  it('json: top-level entries of an object, elements of an array; invalid JSON is an error', () => {
    const obj = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`key${i}`, { value: `v${i} `.repeat(10) }]));
    const parts = chunk(JSON.stringify(obj), 'json');
    expect(parts.length).toBeGreaterThan(1);
    const entries = parts.flatMap((p) => p.split('\n'));
    expect(entries).toHaveLength(40);
    expect(entries[3]).toBe(`"key3": ${JSON.stringify(obj.key3)}`);
    const arr = chunk(JSON.stringify([{ a: 1 }, { b: 2 }]), 'json');
    expect(arr).toEqual(['{"a":1}\n{"b":2}']);
    expect(() => chunk('{not json', 'json')).toThrow(/not valid JSON/);
  });

  it('code: functions are not cut in the middle', () => {
    const fn = (i: number) =>
      `export function f${i}(x: number): number {\n  const y = x * ${i};\n\n  // blank line inside\n  return y + ${i}; ${'// padding '.repeat(8)}\n}`;
    const src = Array.from({ length: 20 }, (_, i) => fn(i)).join('\n\n');
    const parts = chunk(src, 'code');
    expect(parts.length).toBeGreaterThan(1);
    for (let i = 0; i < 20; i++) {
      const holder = parts.filter((p) => p.includes(`function f${i}(`));
      expect(holder).toHaveLength(1);
      expect(holder[0]).toContain(`return y + ${i};`);
    }
  });

  it('format from file names', () => {
    expect(formatFromName('/a/b/README.md')).toBe('markdown');
    expect(formatFromName('x.csv')).toBe('csv');
    expect(formatFromName('x.jsonl')).toBe('jsonl');
    expect(formatFromName('x.json')).toBe('json');
    expect(formatFromName('x.py')).toBe('code');
    expect(formatFromName('notes.txt')).toBe('text');
    expect(formatFromName('noext')).toBeUndefined();
  });
});
