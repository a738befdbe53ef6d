/**
 * In-memory vector index over one embedding model: int8-quantized unit vectors (one per chunk, packed for the
 * SIMD dot-product kernel of sdk/vectors) plus a sign-bit code of each, in contiguous typed arrays.
 *
 * Search:
 * - up to `exactMax` live vectors (or when a filter leaves that few), an exact int8 dot-product scan: 200,000 by
 *   default where WebAssembly SIMD runs the scan (100,000 x 384 in about 4-7 ms), 20,000 in plain JS;
 * - above it, a Hamming scan over the sign bits (12 x 32-bit words per 384-dim vector, about 3 ms at 100,000)
 *   picks `max(2000, 50 x k)` candidates, which are re-ranked with the int8 dot product.
 * Cosine from int8 codes differs from the float cosine by about 1e-3; the sign-bit pre-selection is approximate
 * (recall@10 is measured by `npm run bench`).
 */
import { PackedRows } from '../../../sdk/vectors/packed-rows.js';

export interface VectorHit {
  chunkId: number;
  /** Cosine similarity, -1..1. */
  cosine: number;
}

/** Exact scans up to this many vectors: a whole scan stays within a few milliseconds either way. */
const EXACT_MAX_SIMD = 200_000;
const EXACT_MAX_JS = 20_000;

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

/** A unit-length int8 code of `v` and its scale (value = code x scale). Undefined for a zero or non-finite vector. */
export function quantize(input: ArrayLike<number>): { code: Int8Array; scale: number } | undefined {
  const v = input instanceof Float32Array ? input : Float32Array.from(input);
  const n = v.length;
  let norm = 0;
  let max = 0;
  for (let i = 0; i < n; i++) {
    const x = v[i]!;
    norm += x * x;
    const a = x < 0 ? -x : x;
    if (a > max) max = a;
  }
  if (!(norm > 0) || !Number.isFinite(norm) || !(max > 0)) return undefined;
  // Scale so the largest component maps to 127; the unit norm is folded into the scale.
  const k = 127 / max;
  const code = new Int8Array(n);
  for (let i = 0; i < n; i++) {
    const y = v[i]! * k;
    code[i] = y < 0 ? (y - 0.5) | 0 : (y + 0.5) | 0;
  }
  return { code, scale: max / 127 / Math.sqrt(norm) };
}

/** Keeps the k best (highest score) entries. */
class TopK {
  readonly ids: number[] = [];
  readonly scores: number[] = [];
  constructor(private readonly k: number) {}
  get floor(): number {
    return this.scores.length < this.k ? -Infinity : this.scores[this.scores.length - 1]!;
  }
  push(id: number, score: number): void {
    if (this.scores.length >= this.k && score <= this.scores[this.scores.length - 1]!) return;
    let i = this.scores.length;
    if (i >= this.k) i--;
    else {
      this.scores.push(score);
      this.ids.push(id);
    }
    while (i > 0 && this.scores[i - 1]! < score) {
      this.scores[i] = this.scores[i - 1]!;
      this.ids[i] = this.ids[i - 1]!;
      i--;
    }
    this.scores[i] = score;
    this.ids[i] = id;
  }
}

export class VectorIndex {
  readonly dim: number;
  readonly model: string;
  private readonly words: number;
  private cap = 0;
  private size = 0;
  private live = 0;
  private readonly codes: PackedRows<'i8'>;
  private scales = new Float32Array(0);
  private bits = new Uint32Array(0);
  private chunkIds = new Int32Array(0);
  private docIds = new Int32Array(0);
  private alive = new Uint8Array(0);
  private readonly slotOf = new Map<number, number>();
  /** Hamming distances of the last search (reused: no 200 KB allocation per query at 100,000). */
  private scratch = new Uint16Array(0);
  private readonly exactMax: number;

  /** `simd: false` scores in plain JS (tests compare both). */
  constructor(model: string, dim: number, opts: { exactMax?: number; simd?: boolean } = {}) {
    this.model = model;
    this.dim = dim;
    this.words = Math.ceil(dim / 32);
    this.codes = new PackedRows('i8', dim, opts.simd === false ? { simd: false } : {});
    this.exactMax = opts.exactMax ?? (this.codes.simd ? EXACT_MAX_SIMD : EXACT_MAX_JS);
  }

  /** Whether the exact scan runs in WebAssembly SIMD. */
  get simd(): boolean {
    return this.codes.simd;
  }

  get count(): number {
    return this.live;
  }

  private grow(min: number): void {
    if (min <= this.cap) return;
    const cap = Math.max(min, this.cap * 2, 1024);
    this.codes.reserve(cap);
    const bits = new Uint32Array(cap * this.words);
    bits.set(this.bits.subarray(0, this.size * this.words));
    const scales = new Float32Array(cap);
    scales.set(this.scales.subarray(0, this.size));
    const chunkIds = new Int32Array(cap);
    chunkIds.set(this.chunkIds.subarray(0, this.size));
    const docIds = new Int32Array(cap);
    docIds.set(this.docIds.subarray(0, this.size));
    const alive = new Uint8Array(cap);
    alive.set(this.alive.subarray(0, this.size));
    Object.assign(this, { bits, scales, chunkIds, docIds, alive, cap });
  }

  /** Adds (or replaces) the vector of a chunk. Vectors of another dimension or all zeros are ignored. */
  add(chunkId: number, docId: number, vector: ArrayLike<number>): boolean {
    if (vector.length !== this.dim) return false;
    const q = quantize(vector);
    return q ? this.addCode(chunkId, docId, q.code, q.scale) : false;
  }

  /** Adds (or replaces) a chunk by its int8 code (as `quantize` makes it), e.g. read back from storage. */
  addCode(chunkId: number, docId: number, code: Int8Array, scale: number): boolean {
    if (code.length !== this.dim || !(scale > 0)) return false;
    this.remove(chunkId);
    this.grow(this.size + 1);
    const slot = this.size++;
    this.codes.set(slot, code);
    this.scales[slot] = scale;
    const o = slot * this.words;
    for (let w = 0; w < this.words; w++) {
      let word = 0;
      const base = w * 32;
      const end = Math.min(32, this.dim - base);
      for (let b = 0; b < end; b++) if (code[base + b]! > 0) word |= 1 << b;
      this.bits[o + w] = word;
    }
    this.chunkIds[slot] = chunkId;
    this.docIds[slot] = docId;
    this.alive[slot] = 1;
    this.slotOf.set(chunkId, slot);
    this.live++;
    return true;
  }

  remove(chunkId: number): void {
    const slot = this.slotOf.get(chunkId);
    if (slot === undefined) return;
    this.slotOf.delete(chunkId);
    this.alive[slot] = 0;
    this.live--;
    if (this.size > 4096 && this.live < this.size / 2) this.compact();
  }

  has(chunkId: number): boolean {
    return this.slotOf.has(chunkId);
  }

  private compact(): void {
    let to = 0;
    for (let from = 0; from < this.size; from++) {
      if (!this.alive[from]) continue;
      if (to !== from) {
        this.codes.move(to, from);
        this.bits.copyWithin(to * this.words, from * this.words, (from + 1) * this.words);
        this.scales[to] = this.scales[from]!;
        this.chunkIds[to] = this.chunkIds[from]!;
        this.docIds[to] = this.docIds[from]!;
        this.alive[to] = 1;
        this.slotOf.set(this.chunkIds[to]!, to);
      }
      to++;
    }
    this.alive.fill(0, to, this.size);
    this.size = to;
  }

  private dot(slot: number, q: Int8Array): number {
    return this.codes.dot(slot, q) * this.scales[slot]!;
  }

  /**
   * The k nearest chunks by cosine. `allowDoc(docId)` restricts to some documents (collection and tag filters).
   */
  search(vector: ArrayLike<number>, k: number, allowDoc?: (docId: number) => boolean): VectorHit[] {
    if (vector.length !== this.dim || k <= 0 || this.live === 0) return [];
    const q = quantize(vector);
    if (!q) return [];
    let allowed: Uint8Array | undefined;
    let allowedCount = this.live;
    if (allowDoc) {
      allowed = new Uint8Array(this.size);
      allowedCount = 0;
      let lastDoc = -1;
      let ok = false;
      for (let s = 0; s < this.size; s++) {
        if (!this.alive[s]) continue;
        const doc = this.docIds[s]!;
        // Slots of one document are adjacent (added together): ask once per run.
        if (doc !== lastDoc) {
          lastDoc = doc;
          ok = allowDoc(doc);
        }
        if (ok) {
          allowed[s] = 1;
          allowedCount++;
        }
      }
    }
    const mask = allowed ?? this.alive;
    const top = new TopK(k);
    if (allowedCount <= this.exactMax && allowedCount * 8 >= this.size) {
      // Most slots count: one pass of the kernel over all of them, the rest skipped after it.
      const dots = this.codes.score(q.code, this.size);
      const scales = this.scales;
      for (let s = 0; s < this.size; s++) if (mask[s]) top.push(s, dots[s]! * scales[s]!);
    } else if (allowedCount <= this.exactMax) {
      // A filter left few: those alone.
      for (let s = 0; s < this.size; s++) if (mask[s]) top.push(s, this.dot(s, q.code));
    } else {
      for (const s of this.hammingCandidates(q.code, mask, Math.max(2000, 50 * k))) top.push(s, this.dot(s, q.code));
    }
    return top.ids.map((slot, i) => ({ chunkId: this.chunkIds[slot]!, cosine: Math.max(-1, Math.min(1, top.scores[i]! * q.scale)) }));
  }

  /** Slots whose sign code is nearest to the query's: about `want` of them (ties at the threshold included). */
  private hammingCandidates(code: Int8Array, mask: Uint8Array, want: number): number[] {
    const W = this.words;
    const qb = new Uint32Array(W);
    for (let d = 0; d < this.dim; d++) if (code[d]! > 0) qb[d >>> 5]! |= 1 << (d & 31);
    if (this.scratch.length < this.size) this.scratch = new Uint16Array(this.cap);
    const dist = this.scratch;
    const hist = new Uint32Array(this.dim + 2);
    const bits = this.bits;
    for (let s = 0, o = 0; s < this.size; s++, o += W) {
      if (!mask[s]) {
        dist[s] = 0xffff;
        continue;
      }
      let h = 0;
      for (let w = 0; w < W; w++) h += popcount(bits[o + w]! ^ qb[w]!);
      dist[s] = h;
      hist[h]!++;
    }
    let threshold = 0;
    for (let acc = 0; threshold <= this.dim; threshold++) {
      acc += hist[threshold]!;
      if (acc >= want) break;
    }
    const out: number[] = [];
    for (let s = 0; s < this.size; s++) if (dist[s]! <= threshold) out.push(s);
    return out;
  }
}
