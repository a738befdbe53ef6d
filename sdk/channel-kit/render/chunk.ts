/**
 * Packs rendered blocks into messages of at most `limit` characters (UTF-16 code units, as the platforms count).
 * Whole blocks are kept together when they fit in a message; a block that does not fit alone is cut between its
 * units, each piece wrapped in the block's open/close. A single unit longer than a message (a 5,000-character
 * word or table row) is the only thing cut inside, and then as plain text.
 */
import type { Block } from './blocks.js';

const SEP = '\n\n';

/** Cuts `s` into pieces of at most `room`, never inside an HTML entity or a surrogate pair, preferring spaces. */
export function hardSplit(s: string, room: number, entities: boolean): string[] {
  const out: string[] = [];
  let rest = s;
  const size = Math.max(1, room);
  while (rest.length > size) {
    let cut = size;
    const space = rest.lastIndexOf(' ', cut - 1);
    if (space > size * 0.8) cut = space + 1;
    if (entities) {
      const amp = rest.lastIndexOf('&', cut - 1);
      if (amp >= 0 && amp > cut - 10 && rest.indexOf(';', amp) >= cut) cut = amp;
    }
    const code = rest.charCodeAt(cut - 1);
    if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
    if (cut <= 0) cut = size;
    out.push(rest.slice(0, cut));
    rest = rest.slice(cut);
  }
  if (rest) out.push(rest);
  return out;
}

export function pack(blocks: Block[], limit: number, entities: boolean): string[] {
  const chunks: string[] = [];
  const emit = (s: string) => {
    if (s.trim()) chunks.push(s);
  };
  let cur = '';
  for (const b of blocks) {
    const full = b.open + b.body + b.close;
    if (!cur && full.length <= limit) {
      cur = full;
      continue;
    }
    if (cur && cur.length + SEP.length + full.length <= limit) {
      cur += SEP + full;
      continue;
    }
    emit(cur);
    cur = '';
    if (full.length <= limit) {
      cur = full;
      continue;
    }
    const wrap = b.open.length + b.close.length;
    let part = '';
    let has = false;
    const flush = () => {
      if (has) emit(b.open + part + b.close);
      part = '';
      has = false;
    };
    for (const u of b.units()) {
      const add = (has ? b.joiner : '') + u.text;
      if (wrap + part.length + add.length <= limit) {
        part += add;
        has = true;
        continue;
      }
      flush();
      if (wrap + u.text.length <= limit) {
        part = u.text;
        has = true;
        continue;
      }
      for (const piece of hardSplit(u.plain, limit - wrap, entities)) emit(b.open + piece + b.close);
    }
    if (has) cur = b.open + part + b.close;
  }
  emit(cur);
  return chunks;
}
