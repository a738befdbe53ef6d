/** Edit distance, for "did you mean" suggestions. */
export function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = prev[j]!;
      prev[j] = Math.min(prev[j]! + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = tmp;
    }
  }
  return prev[b.length]!;
}

/** Up to n names closest to `name`, only those plausibly meant (distance at most a third of the length, min 2). */
export function nearestNames(name: string, names: Iterable<string>, n = 3): string[] {
  const lower = name.toLowerCase();
  const limit = Math.max(2, Math.ceil(name.length / 3));
  return [...names]
    .map((k) => ({ k, d: editDistance(lower, k.toLowerCase()) }))
    .filter((x) => x.d <= limit || x.k.toLowerCase().includes(lower))
    .sort((a, b) => a.d - b.d)
    .slice(0, n)
    .map((x) => x.k);
}
