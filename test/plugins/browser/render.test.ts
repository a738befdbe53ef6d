/**
 * The snapshot's text within its token budget (render.ts), without a browser: the header names the URL once in
 * the untrusted marker, and a continuation part shows what the previous part left out, never padding the room a
 * long line left with short lines the previous part showed.
 */
import { describe, expect, it } from 'vitest';
import { renderSnapshot } from '../../../plugins/browser/src/render.js';
import type { PageSnapshot, SnapshotElement } from '../../../plugins/browser/src/snapshot.js';

const el = (ref: number, label: string, distance: number): SnapshotElement => ({
  ref,
  kind: 'link',
  label,
  frames: [],
  path: `body>a:${ref}`,
  inView: distance === 0,
  distance,
  order: ref,
});

function page(): PageSnapshot {
  // One short element in view, then many long ones below it: a part fills up with long lines and has room left
  // that only a short line would fit.
  const long = (i: number) => `A long related story number ${i} ${'about the same topic '.repeat(4)}`.trim();
  return {
    title: 'Big',
    url: 'http://127.0.0.1:1/big',
    elements: [el(1, 'Top', 0), ...Array.from({ length: 200 }, (_, i) => el(i + 2, long(i + 2), 100 + i * 20))],
    outline: [],
    blank: false,
    more: 0,
    hasPassword: false,
    scroll: { y: 0, max: 5000 },
  };
}

describe('renderSnapshot', () => {
  it('heads the text with the untrusted marker naming the URL, once', () => {
    const r = renderSnapshot(page(), { maxTokens: 600 });
    expect(r.text.split('\n').slice(0, 2)).toEqual(['[untrusted page content from http://127.0.0.1:1/big]', 'Page: Big']);
    expect(r.text.split('http://127.0.0.1:1/big')).toHaveLength(2);
    expect(r.truncated).toBe(true);
  });

  it('a continuation never repeats a line the previous part showed while something left out is still left out', () => {
    for (const maxTokens of [500, 503, 507, 511, 517, 523, 600, 641]) {
      const first = renderSnapshot(page(), { maxTokens });
      expect(first.text).toContain('[1] link: Top');
      const second = renderSnapshot(page(), { maxTokens, shown: first.shown, part: 2 });
      expect(second.truncated, `${maxTokens}`).toBe(true);
      expect(second.text, `${maxTokens}`).not.toContain('[1] link: Top');
      const shownTwice = [...second.shown.refs].filter((r) => first.shown.refs.has(r));
      // what part 2 added is new: its own refs are none of part 1's
      const own = second.text.match(/^\[(\d+)\]/gm)!.map((m) => Number(m.slice(1, -1)));
      expect(
        own.filter((r) => first.shown.refs.has(r)),
        `${maxTokens}`,
      ).toEqual([]);
      expect(shownTwice.length).toBe(first.shown.refs.size);
    }
  });
});
