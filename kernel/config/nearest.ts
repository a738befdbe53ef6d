/**
 * "Did you mean ...?" for mistyped configuration keys.
 */

/** Levenshtein distance, two rows at a time. */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  if (a.length === 0) return b.length;
  if (b.length === 0) return a.length;
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  let cur = new Array<number>(b.length + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      cur[j] = Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost);
    }
    [prev, cur] = [cur, prev];
  }
  return prev[b.length] ?? 0;
}

/**
 * Up to `n` candidates close to `wanted`, closest first, compared case-insensitively.
 * A candidate counts as close when the edit distance is small for its length, or when one name
 * contains the other (`port` -> `gatewayPort`), which edit distance alone ranks badly.
 */
export function nearest(wanted: string, candidates: Iterable<string>, n = 3): string[] {
  const w = wanted.toLowerCase();
  if (w === '' || n <= 0) return [];
  const limit = Math.max(2, Math.floor(w.length * 0.4));
  const scored: Array<{ name: string; score: number }> = [];
  for (const name of candidates) {
    const c = name.toLowerCase();
    const d = editDistance(w, c);
    if (d <= limit) scored.push({ name, score: d });
    else if (w.length >= 3 && (c.includes(w) || w.includes(c))) scored.push({ name, score: limit + Math.abs(c.length - w.length) / 100 });
  }
  scored.sort((x, y) => x.score - y.score || x.name.localeCompare(y.name));
  return scored.slice(0, n).map((s) => s.name);
}

/** " (did you mean a, b?)" or "" */
export function suggestionText(suggestions: string[]): string {
  return suggestions.length > 0 ? ` (did you mean ${suggestions.join(', ')}?)` : '';
}
