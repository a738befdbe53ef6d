/**
 * sdk/vectors: the SIMD kernels (WebAssembly, compiled from simd.wat) score packed rows exactly as a plain scalar
 * dot product does, at any dimension (padding), after the storage grew, after rows moved; the plain-JS fallback
 * gives the same; the committed module is what simd.wat compiles to.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PackedRows, simdAvailable } from '../../../sdk/vectors/packed-rows.js';
import { seeded } from '../../helpers.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');

const r = seeded(7);
/** int8 codes as the knowledge index makes them (-127..127), the extremes included. */
const codes = (dim: number) =>
  Int8Array.from({ length: dim }, (_, i) => (i % 11 === 0 ? (i % 2 ? 127 : -127) : Math.round(r() * 254 - 127)));
const floats = (dim: number) => Float32Array.from({ length: dim }, () => r() * 2 - 1);
const ref = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
};

describe('sdk/vectors packed rows', () => {
  it('the committed module is what simd.wat compiles to, and this runtime runs it', async () => {
    const { compileSimd, moduleSource } = (await import(join(ROOT, 'scripts', 'simd.mjs'))) as {
      compileSimd(): Promise<Buffer>;
      moduleSource(b: Buffer): string;
    };
    expect(readFileSync(join(ROOT, 'sdk', 'vectors', 'simd-module.ts'), 'utf8')).toBe(moduleSource(await compileSimd()));
    expect(simdAvailable()).toBe(true);
    expect(new PackedRows('i8', 384).simd).toBe(true);
    expect(new PackedRows('f32', 384, { simd: false }).simd).toBe(false);
  });

  for (const simd of [true, false]) {
    const how = simd ? 'SIMD' : 'plain JS';
    it(`int8 rows: exact integer dot products at dimensions that need padding and not (${how})`, () => {
      for (const dim of [1, 15, 16, 17, 100, 384, 385]) {
        const rows = new PackedRows('i8', dim, { simd });
        expect(rows.stride % 16).toBe(0);
        const data = Array.from({ length: 37 }, () => codes(dim));
        rows.reserve(data.length);
        data.forEach((v, i) => rows.set(i, v));
        const q = codes(dim);
        const got = [...rows.score(q, data.length)];
        expect(got).toEqual(data.map((v) => ref(v, q)));
        expect(rows.dot(5, q)).toBe(ref(data[5]!, q));
      }
    });

    it(`float32 rows: dot products within float rounding (${how})`, () => {
      for (const dim of [3, 8, 9, 384, 1536]) {
        const rows = new PackedRows('f32', dim, { simd });
        expect(rows.stride % 8).toBe(0);
        const data = Array.from({ length: 23 }, () => floats(dim));
        rows.reserve(data.length);
        data.forEach((v, i) => rows.set(i, v));
        const q = floats(dim);
        const got = rows.score(q, data.length);
        expect(got).toBeInstanceOf(Float32Array);
        data.forEach((v, i) => expect(got[i]).toBeCloseTo(ref(v, q), 3));
      }
    });

    it(`rows survive growth after a score (the memory grows, views are remade), and moves (${how})`, () => {
      const dim = 384;
      const rows = new PackedRows('i8', dim, { simd });
      const data: Int8Array[] = [];
      const q = codes(dim);
      // Grown one row at a time, scored in between: the query and score area sit after the rows and move with them.
      for (let i = 0; i < 700; i++) {
        data.push(codes(dim));
        rows.reserve(i + 1);
        rows.set(i, data[i]!);
        if (i % 97 === 0) expect([...rows.score(q, i + 1)]).toEqual(data.map((v) => ref(v, q)));
      }
      expect(rows.capacity).toBeGreaterThanOrEqual(700);
      expect([...rows.score(q, 700)]).toEqual(data.map((v) => ref(v, q)));
      rows.move(3, 650);
      expect(rows.score(q, 700)[3]).toBe(ref(data[650]!, q));
      // A score of more rows than reserved scores the reserved ones.
      expect(rows.score(q, 10_000).length).toBe(rows.capacity);
    });
  }

  it('refuses rows and queries of the wrong length, rows outside the reservation, and bad dimensions', () => {
    const rows = new PackedRows('f32', 4);
    rows.reserve(1);
    expect(() => rows.set(0, [1, 2, 3])).toThrow(/4 values, not 3/);
    expect(() => rows.set(rows.capacity, [1, 2, 3, 4])).toThrow(/outside/);
    expect(() => rows.score([1, 2], 1)).toThrow(/2 values, not 4/);
    expect(() => new PackedRows('i8', 0)).toThrow(/positive integer/);
  });
});
