/**
 * Inverted index over short and episodic entries: token -> ids. A keyword query touches only the postings of
 * its tokens instead of scanning every entry's text.
 */
import type { MemoryEntry } from '../../../sdk/index.js';
import { tokens } from './text.js';

export class KeywordIndex {
  private postings = new Map<string, Set<string>>();
  private byId = new Map<string, string[]>();

  add(e: MemoryEntry): void {
    if (this.byId.has(e.id)) return;
    const toks = [...new Set(tokens(e.content))];
    this.byId.set(e.id, toks);
    for (const t of toks) {
      let s = this.postings.get(t);
      if (!s) this.postings.set(t, (s = new Set()));
      s.add(e.id);
    }
  }

  remove(id: string): void {
    const toks = this.byId.get(id);
    if (!toks) return;
    this.byId.delete(id);
    for (const t of toks) {
      const s = this.postings.get(t);
      s?.delete(id);
      if (s && s.size === 0) this.postings.delete(t);
    }
  }

  clear(): void {
    this.postings.clear();
    this.byId.clear();
  }

  /** id -> fraction of the query's tokens the entry holds (only entries holding at least one). */
  match(queryTokens: string[]): Map<string, number> {
    const q = [...new Set(queryTokens)];
    const hits = new Map<string, number>();
    for (const t of q) for (const id of this.postings.get(t) ?? []) hits.set(id, (hits.get(id) ?? 0) + 1);
    for (const [id, n] of hits) hits.set(id, n / q.length);
    return hits;
  }
}

/** Fraction of query tokens found in a text (for the few long-memory sections, tokenised on the fly). */
export function coverage(queryTokens: string[], text: string): number {
  const q = [...new Set(queryTokens)];
  if (!q.length) return 0;
  const have = new Set(tokens(text));
  return q.filter((t) => have.has(t)).length / q.length;
}
