/**
 * The snapshot as the model reads it, within a token budget. Items are ranked: interactive elements in the
 * viewport, then the outline in the viewport, then everything else by distance from the viewport (elements before
 * text at equal distance). What fits is printed in document order; what does not is counted in an explicit marker
 * that says how to get the rest: calling browser_examine_page again on the unchanged page continues with what was
 * left out, and scrolling brings another part of the page into the viewport, which comes first.
 */
import type { OutlineLine, PageSnapshot, SnapshotElement } from './snapshot.js';

/**
 * Default snapshot budget in tokens (browserSnapshotMaxTokens): about 3,500 characters, so that a whole snapshot,
 * its truncation marker included, fits the agent's 4,000-character cut of a tool result (docs/agent.md).
 */
export const DEFAULT_SNAPSHOT_TOKENS = 1000;

/**
 * Tokens of a text, estimated at 3.5 characters a token: what cl100k-style tokenizers give on English page text
 * with numbers and short lines (measured on the fixture pages); no tokenizer is loaded for it.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 3.5);
}

export function elementLine(e: SnapshotElement): string {
  return `[${e.ref}] ${e.kind}: ${e.label || '(no label)'}${e.attr ? ` (${e.attr})` : ''}`;
}

function outlineLine(o: OutlineLine): string {
  return o.level ? `${'#'.repeat(o.level)} ${o.text}` : o.text;
}

export interface RenderOptions {
  maxTokens: number;
  /** Header lines (state, status, notes) printed after the title. */
  header?: string[];
  /** Items already shown by the previous part (refs, outline orders): ranked last. */
  shown?: { refs: Set<number>; outline: Set<number> };
  /** Part number, for the marker. */
  part?: number;
}

export interface Rendered {
  text: string;
  /** What this part showed (to continue with the rest). */
  shown: { refs: Set<number>; outline: Set<number> };
  truncated: boolean;
}

type Item = { kind: 'e'; e: SnapshotElement; line: string } | { kind: 'o'; o: OutlineLine; line: string };

export function renderSnapshot(s: PageSnapshot, opts: RenderOptions): Rendered {
  // The first line marks what follows as the page's (untrusted) and names its URL, once: every token of a snapshot is
  // paid for at every step that carries it.
  const head = [`[untrusted page content from ${s.url}]`, `Page: ${s.title || '(no title)'}`, ...(opts.header ?? [])];
  if (opts.part && opts.part > 1) head.push(`(part ${opts.part}: what the previous snapshot left out comes first)`);
  const items: Item[] = [
    ...s.elements.map((e): Item => ({ kind: 'e', e, line: elementLine(e) })),
    ...s.outline.map((o): Item => ({ kind: 'o', o, line: outlineLine(o) })),
  ];
  const seen = (it: Item) => (it.kind === 'e' ? opts.shown?.refs.has(it.e.ref) : opts.shown?.outline.has(it.o.order)) ?? false;
  const place = (it: Item) => (it.kind === 'e' ? it.e : it.o);
  const ranked = [...items].sort((a, b) => {
    const sa = seen(a) ? 1 : 0;
    const sb = seen(b) ? 1 : 0;
    if (sa !== sb) return sa - sb;
    const pa = place(a);
    const pb = place(b);
    if (pa.inView !== pb.inView) return pa.inView ? -1 : 1;
    if (pa.inView && a.kind !== b.kind) return a.kind === 'e' ? -1 : 1;
    if (pa.distance !== pb.distance) return pa.distance - pb.distance;
    if (a.kind !== b.kind) return a.kind === 'e' ? -1 : 1;
    return pa.order - pb.order;
  });
  // room for the header, the section titles, the untrusted-content line and the marker (about 100 tokens)
  let budget = opts.maxTokens - estimateTokens(head.join('\n')) - 140;
  const kept: Item[] = [];
  // A continuation shows what the previous part left out: an item shown already comes back only when everything
  // left out fits, never as filler in the room a long line left (which made part 2 repeat part 1's short lines).
  let leftOut = false;
  for (const it of ranked) {
    const cost = estimateTokens(it.line) + 1;
    const again = seen(it);
    if (again && leftOut) continue;
    if (cost > budget) {
      if (!again) leftOut = true;
      continue;
    }
    budget -= cost;
    kept.push(it);
  }
  const keptSet = new Set(kept);
  const left = items.filter((it) => !keptSet.has(it));
  const els = kept.filter((it): it is Extract<Item, { kind: 'e' }> => it.kind === 'e').sort((a, b) => a.e.ref - b.e.ref);
  const outl = kept.filter((it): it is Extract<Item, { kind: 'o' }> => it.kind === 'o').sort((a, b) => a.o.order - b.o.order);
  const lines = [...head, ''];
  if (s.elements.length === 0) lines.push('No interactive elements.');
  else lines.push('Interactive elements:', ...els.map((i) => i.line));
  lines.push('', 'Outline:', ...(outl.length ? outl.map((i) => i.line) : ['(no text)']));
  const leftEls = left.filter((i) => i.kind === 'e').length + s.more;
  const leftText = left.filter((i) => i.kind === 'o').length;
  const truncated = leftEls + leftText > 0;
  if (truncated) {
    const leftTokens = left.reduce((n, i) => n + estimateTokens(i.line) + 1, 0);
    lines.push(
      '',
      `[truncated: ${leftEls} more interactive element(s) and ${leftText} more line(s) of text (about ${leftTokens} tokens) are not shown, to stay within ${opts.maxTokens} tokens (browserSnapshotMaxTokens). ` +
        'Call browser_examine_page again for the rest, or browser_scroll to the part you need (the viewport comes first); extract_article reads long text.]',
    );
  }
  const shown = {
    refs: new Set([...(opts.shown?.refs ?? []), ...els.map((i) => i.e.ref)]),
    outline: new Set([...(opts.shown?.outline ?? []), ...outl.map((i) => i.o.order)]),
  };
  return { text: lines.join('\n'), shown, truncated };
}
