/**
 * Benchmark harness: each benchmark measures Keel and its peer in the same run and reports the ratio.
 */
export interface BenchRow {
  /** What was measured, e.g. `keel push cold start`. */
  name: string;
  /** Keel's figure. */
  value: number;
  unit: string;
  /** The peer measured in the same run, e.g. `node -e 0`. */
  peer: string;
  peerValue: number;
  /** Human-readable budget from DESIGN.md section 7, e.g. `<= 2.5x peer`. */
  budget: string;
  /** Whether the budget holds. */
  ok: boolean;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function fmt(n: number): string {
  if (n >= 100) return n.toFixed(0);
  if (n >= 10) return n.toFixed(1);
  return n.toFixed(3);
}

export function printRows(rows: BenchRow[]): void {
  for (const r of rows) {
    const ratio = r.peerValue ? r.value / r.peerValue : NaN;
    console.log(
      `${r.ok ? 'ok  ' : 'OVER'} ${r.name}: ${fmt(r.value)} ${r.unit} | ${r.peer}: ${fmt(r.peerValue)} ${r.unit} | ratio ${fmt(ratio)} | budget ${r.budget}`,
    );
  }
}
