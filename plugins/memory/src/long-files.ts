/**
 * The long-term markdown files (SPEC "Memory files"), edited so a person's manual edits are never lost: every
 * change re-reads the file, inserts its lines at the right place and writes the file back atomically. Text the
 * code does not recognise (extra sections, comments, reordered bullets) is kept byte for byte. A missing file
 * is created with its template; a section a person deleted is added again at the end.
 *
 * USER.md:     # User Profile / ## Core Identity / ## Preferences / ## Constraints, each a bullet list.
 * LEARNING.md: # Agent Learning Base, one sentence of intro, then ## <Topic> sections of text.
 * JOURNAL.md:  # Agent Journal, then ## YYYY-MM-DD sections.
 */
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { withFileLockSync } from '../../../sdk/file-lock.js';
import { writeFileAtomicSync } from './atomic.js';

export const USER_SECTIONS = ['Core Identity', 'Preferences', 'Constraints'] as const;
export type UserSection = (typeof USER_SECTIONS)[number];
export const LONG_FILES = ['USER.md', 'LEARNING.md', 'JOURNAL.md'] as const;
export type LongFile = (typeof LONG_FILES)[number];

export const LEARNING_INTRO = 'What the agent has learned, one section per topic.';

const TEMPLATES: Record<LongFile, string> = {
  'USER.md': '# User Profile\n\n## Core Identity\n\n## Preferences\n\n## Constraints\n',
  'LEARNING.md': `# Agent Learning Base\n\n${LEARNING_INTRO}\n`,
  'JOURNAL.md': '# Agent Journal\n',
};

export interface Section {
  file: LongFile;
  heading: string;
  body: string;
  mtime: number;
}

/** Serialises edits within this process (one at a time per home). */
let chain: Promise<unknown> = Promise.resolve();
/** Bumped after every write of a long-term file by this process (status counts key their cache on it). */
let localWrites = 0;
export function longFileWrites(): number {
  return localWrites;
}
export function markLongFilesChanged(): void {
  localWrites++;
}

/** `fn` under `<name>.lock`: a separate gateway running memory skills edits these files too. */
function locked<T>(home: string, name: string, fn: () => T): T {
  mkdirSync(home, { recursive: true });
  return withFileLockSync(join(home, `${name}.lock`), fn, { what: name });
}

function serial<T>(fn: () => T): Promise<T> {
  const run = (): T => {
    try {
      return fn();
    } finally {
      localWrites++;
    }
  };
  const next = chain.then(run, run);
  chain = next.catch(() => undefined);
  return next;
}

function read(home: string, file: LongFile): string {
  const p = join(home, file);
  return existsSync(p) ? readFileSync(p, 'utf8') : TEMPLATES[file];
}

/** Index of the line `## <heading>` (case-insensitive, trimmed), or -1. */
function findHeading(lines: string[], heading: string): number {
  const want = heading.trim().toLowerCase();
  return lines.findIndex(
    (l) =>
      /^##\s+/.test(l) &&
      l
        .replace(/^##\s+/, '')
        .trim()
        .toLowerCase() === want,
  );
}

/** Index just after the last non-blank line of the section starting at `h` (before the next `#`/`##` heading). */
function sectionEnd(lines: string[], h: number): number {
  let next = lines.length;
  for (let i = h + 1; i < lines.length; i++) {
    if (/^#{1,2}\s/.test(lines[i]!)) {
      next = i;
      break;
    }
  }
  let end = next;
  while (end > h + 1 && lines[end - 1]!.trim() === '') end--;
  return end;
}

/**
 * Insert `block` (lines) at the end of section `heading`, creating the section at the end when missing.
 * `paragraph` separates the block from earlier content of the section with a blank line.
 */
function insertInSection(text: string, heading: string, block: string[], paragraph: boolean): string {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  if (lines.at(-1) === '') lines.pop();
  let h = findHeading(lines, heading);
  if (h < 0) {
    while (lines.length && lines.at(-1)!.trim() === '') lines.pop();
    lines.push('', `## ${heading}`);
    h = lines.length - 1;
  }
  const end = sectionEnd(lines, h);
  const hasContent = end > h + 1;
  const insert = [...(hasContent && paragraph ? [''] : []), ...(hasContent ? [] : ['']), ...block];
  const after = lines.slice(end);
  // Keep one blank line before whatever follows.
  const tail = after.length && after[0]!.trim() !== '' ? ['', ...after] : after;
  return `${[...lines.slice(0, end), ...insert, ...tail].join('\n').replace(/\n*$/, '')}\n`;
}

export function appendUserFact(home: string, section: UserSection, fact: string): Promise<void> {
  return serial(() =>
    locked(home, 'USER.md', () => {
      const text = read(home, 'USER.md');
      const bullet = `- ${fact.replace(/\s*\n\s*/g, ' ').trim()}`;
      writeFileAtomicSync(join(home, 'USER.md'), insertInSection(text, section, [bullet], false));
    }),
  );
}

export function appendLearning(home: string, topic: string, content: string): Promise<void> {
  return serial(() =>
    locked(home, 'LEARNING.md', () => {
      const text = read(home, 'LEARNING.md');
      writeFileAtomicSync(
        join(home, 'LEARNING.md'),
        insertInSection(text, topic.replace(/\s*\n\s*/g, ' ').trim(), content.trim().split('\n'), true),
      );
    }),
  );
}

export function appendJournal(home: string, date: string, entry: string): Promise<void> {
  return serial(() =>
    locked(home, 'JOURNAL.md', () => {
      const text = read(home, 'JOURNAL.md');
      writeFileAtomicSync(join(home, 'JOURNAL.md'), insertInSection(text, date, entry.trim().split('\n'), true));
    }),
  );
}

/** Every `## ` section of the files that exist. */
/** Parsed sections per file, reused while the file's size and mtime are unchanged (status is polled often). */
const parsed = new Map<string, { key: string; sections: Section[] }>();

export function readSections(home: string, files: readonly LongFile[] = LONG_FILES): Section[] {
  const out: Section[] = [];
  for (const file of files) {
    const p = join(home, file);
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) continue; // absent (no throw: this runs on every status request)
    const mtime = st.mtimeMs;
    const key = `${st.size}:${st.mtimeMs}:${st.ino}`;
    const cached = parsed.get(p);
    if (cached?.key === key) {
      out.push(...cached.sections);
      continue;
    }
    let text: string;
    try {
      text = readFileSync(p, 'utf8');
    } catch {
      continue;
    }
    const start = out.length;
    const lines = text.replace(/\r\n/g, '\n').split('\n');
    for (let i = 0; i < lines.length; i++) {
      if (!/^##\s+/.test(lines[i]!)) continue;
      const heading = lines[i]!.replace(/^##\s+/, '').trim();
      const end = sectionEnd(lines, i);
      const body = lines
        .slice(i + 1, end)
        .join('\n')
        .trim();
      out.push({ file, heading, body, mtime });
    }
    parsed.set(p, { key, sections: out.slice(start) });
  }
  return out;
}

/** Today's date as the journal and daily logs name it: the machine's local calendar date, YYYY-MM-DD. */
export function localDate(d = new Date()): string {
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}
