/**
 * Format-aware chunking. Chunks aim at TARGET (1000) characters and stay under MAX (1200) unless a single
 * indivisible unit is longer, in which case that unit is cut at sentence, line or word boundaries with OVERLAP
 * (150) characters carried over from the previous piece.
 * - markdown: one section per heading; each chunk starts with its heading path ("# A > ## B"); code fences are
 *   never split at a heading-looking line; small sibling sections are packed together.
 * - csv: whole rows (quoted newlines respected); every chunk starts with the header row.
 * - jsonl: whole records (one per line), packed.
 * - json: an array's elements or an object's top-level entries (`"key": value`), packed; invalid JSON is an error.
 * - code: top-level blocks (a non-indented line after a blank line starts one: functions, classes...), packed.
 * - text: paragraphs (blank-line separated), packed.
 * Record formats (csv, jsonl, json, code blocks) get no overlap: a record is never cut unless it alone exceeds MAX.
 */
import { errorsFor } from '../../../sdk/errors.js';
import type { KnowledgeFormat } from './types.js';

const coded = errorsFor('knowledge');

export const TARGET = 1000;
export const MAX = 1200;
export const OVERLAP = 150;

/** Cuts an over-long unit at the best boundary before MAX, carrying OVERLAP characters over. */
export function splitLong(text: string, max = MAX, overlap = OVERLAP): string[] {
  const out: string[] = [];
  let rest = text.trim();
  while (rest.length > max) {
    const window = rest.slice(0, max);
    let cut = -1;
    for (const re of [/\n\s*\n/g, /[.!?]["')\]]?\s+/g, /\n/g, /\s+/g]) {
      let m: RegExpExecArray | null;
      let last = -1;
      re.lastIndex = 0;
      while ((m = re.exec(window))) if (m.index + m[0].length >= max * 0.5) last = m.index + m[0].length;
      if (last > 0) {
        cut = last;
        break;
      }
    }
    if (cut <= 0) cut = max;
    out.push(rest.slice(0, cut).trim());
    // Overlap: start the next piece a little before the cut, at a word boundary.
    let from = Math.max(cut - overlap, 1);
    const space = rest.indexOf(' ', from);
    if (space > 0 && space < cut) from = space + 1;
    rest = rest.slice(from).trim();
  }
  if (rest) out.push(rest);
  return out;
}

/** Greedy packing of units (joined by `sep`) up to MAX; over-long units are split. `prefix` starts every chunk. */
export function pack(units: string[], sep: string, prefix = '', overlapLong = true): string[] {
  const out: string[] = [];
  const room = Math.max(MAX - prefix.length, 200);
  let cur = '';
  const flush = () => {
    if (cur.trim()) out.push(prefix + cur);
    cur = '';
  };
  for (const u of units) {
    if (!u.trim()) continue;
    if (u.length > room) {
      flush();
      for (const piece of splitLong(u, room, overlapLong ? OVERLAP : 0)) out.push(prefix + piece);
      continue;
    }
    if (cur && cur.length + sep.length + u.length > room) flush();
    cur = cur ? cur + sep + u : u;
    if (cur.length >= TARGET) flush();
  }
  flush();
  return out;
}

function paragraphs(text: string): string[] {
  return text
    .split(/\n[ \t]*\n+/)
    .map((p) => p.trim())
    .filter(Boolean);
}

function chunkText(text: string): string[] {
  return pack(paragraphs(text), '\n\n');
}

function chunkMarkdown(text: string): string[] {
  interface Section {
    path: string;
    body: string[];
  }
  const sections: Section[] = [];
  const stack: Array<{ level: number; title: string }> = [];
  let cur: Section = { path: '', body: [] };
  let fence: string | undefined;
  for (const line of text.split(/\r?\n/)) {
    const f = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (f) {
      const ch = f[1]![0]!;
      if (fence === undefined) fence = ch;
      else if (ch === fence) fence = undefined;
    }
    const h = fence === undefined && !f ? /^(#{1,6})\s+(.+?)\s*#*\s*$/.exec(line) : null;
    if (h) {
      if (cur.body.join('').trim() || cur.path) sections.push(cur);
      const level = h[1]!.length;
      while (stack.length && stack[stack.length - 1]!.level >= level) stack.pop();
      stack.push({ level, title: `${h[1]} ${h[2]}` });
      cur = { path: stack.map((s) => s.title).join(' > '), body: [] };
    } else cur.body.push(line);
  }
  sections.push(cur);
  const out: string[] = [];
  // Pack small consecutive sections; a section larger than MAX is split by paragraphs under its heading path.
  let acc = '';
  const flush = () => {
    if (acc.trim()) out.push(acc.trim());
    acc = '';
  };
  for (const s of sections) {
    const body = s.body.join('\n').trim();
    const whole = s.path ? (body ? `${s.path}\n\n${body}` : s.path) : body;
    if (!whole) continue;
    if (whole.length > MAX) {
      flush();
      const prefix = s.path ? `${s.path}\n\n` : '';
      out.push(...pack(paragraphs(body), '\n\n', prefix));
      continue;
    }
    if (acc && acc.length + 2 + whole.length > MAX) flush();
    acc = acc ? `${acc}\n\n${whole}` : whole;
    if (acc.length >= TARGET) flush();
  }
  flush();
  return out;
}

/** CSV records (a quoted field may hold newlines). */
export function csvRecords(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') quoted = !quoted;
    else if (c === '\n' && !quoted) {
      out.push(text.slice(start, i).replace(/\r$/, ''));
      start = i + 1;
    }
  }
  if (start < text.length) out.push(text.slice(start).replace(/\r$/, ''));
  return out.filter((r) => r.trim());
}

function chunkCsv(text: string): string[] {
  const [header, ...rows] = csvRecords(text);
  if (header === undefined) return [];
  if (!rows.length) return [header];
  return pack(rows, '\n', `${header}\n`, false);
}

function chunkJsonl(text: string): string[] {
  return pack(
    text
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter(Boolean),
    '\n',
    '',
    false,
  );
}

function chunkJson(text: string): string[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw coded(
      'KEEL_E_INVALID_ARGUMENT',
      `the content is not valid JSON (${(e as Error).message}); use format "text" to store it as plain text`,
    );
  }
  let units: string[];
  if (Array.isArray(value)) units = value.map((v) => JSON.stringify(v));
  else if (value && typeof value === 'object') units = Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`);
  else units = [JSON.stringify(value)];
  return pack(units, '\n', '', false);
}

function chunkCode(text: string): string[] {
  const lines = text.split(/\r?\n/);
  const blocks: string[] = [];
  let cur: string[] = [];
  let blank = false;
  for (const line of lines) {
    const topLevel = /^\S/.test(line) && !/^[)}\]]/.test(line);
    if (topLevel && blank && cur.some((l) => l.trim())) {
      blocks.push(cur.join('\n').trim());
      cur = [];
    }
    cur.push(line);
    blank = !line.trim();
  }
  if (cur.some((l) => l.trim())) blocks.push(cur.join('\n').trim());
  return pack(blocks, '\n\n', '', false);
}

/** The chunks of a document's content in its format. */
export function chunk(content: string, format: KnowledgeFormat): string[] {
  const text = content.replace(/^\uFEFF/, '');
  if (!text.trim()) return [];
  switch (format) {
    case 'markdown':
      return chunkMarkdown(text);
    case 'csv':
      return chunkCsv(text);
    case 'jsonl':
      return chunkJsonl(text);
    case 'json':
      return chunkJson(text);
    case 'code':
      return chunkCode(text);
    default:
      return chunkText(text);
  }
}

const CODE_EXT = new Set([
  'ts',
  'tsx',
  'mts',
  'cts',
  'js',
  'jsx',
  'mjs',
  'cjs',
  'py',
  'go',
  'rs',
  'java',
  'kt',
  'kts',
  'scala',
  'c',
  'h',
  'cc',
  'cpp',
  'cxx',
  'hpp',
  'cs',
  'rb',
  'php',
  'swift',
  'm',
  'sh',
  'bash',
  'zsh',
  'ps1',
  'lua',
  'pl',
  'r',
  'sql',
  'dart',
  'ex',
  'exs',
  'erl',
  'hs',
  'clj',
  'vue',
  'svelte',
  'css',
  'scss',
  'yaml',
  'yml',
  'toml',
]);

/** Format from a file name or URL path; undefined when the extension says nothing. */
export function formatFromName(name: string): KnowledgeFormat | undefined {
  const ext = /\.([A-Za-z0-9]+)$/.exec(name.split(/[?#]/)[0] ?? '')?.[1]?.toLowerCase();
  if (!ext) return undefined;
  if (['md', 'markdown', 'mdx', 'mdown'].includes(ext)) return 'markdown';
  if (ext === 'csv') return 'csv';
  if (ext === 'json') return 'json';
  if (ext === 'jsonl' || ext === 'ndjson') return 'jsonl';
  if (CODE_EXT.has(ext)) return 'code';
  if (['txt', 'text', 'log', 'rst', 'adoc', 'org'].includes(ext)) return 'text';
  return undefined;
}
