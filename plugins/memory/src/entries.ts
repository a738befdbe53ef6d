/** Pure helpers of the memory service: vector maths, hit lines, long-memory entries, the extractive summary. */
import { randomBytes } from 'node:crypto';
import type { MemoryEntry } from '../../../sdk/index.js';
import type { Section } from './long-files.js';
import { cap } from './text.js';

export interface RecallHit {
  id: string;
  kind: 'short' | 'episodic' | 'long';
  timestamp: string;
  channel: string;
  score: number;
  content: string;
}

export function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

export function unit(v: number[]): Float32Array {
  const out = Float32Array.from(v);
  let n = 0;
  for (let i = 0; i < out.length; i++) n += out[i]! * out[i]!;
  n = Math.sqrt(n) || 1;
  for (let i = 0; i < out.length; i++) out[i]! /= n;
  return out;
}

export function hitOf(e: MemoryEntry, score: number): RecallHit {
  return {
    id: e.id,
    kind: e.type,
    timestamp: e.timestamp,
    channel: String(e.metadata.channel ?? e.metadata.file ?? '-'),
    score,
    content: e.content,
  };
}

/** A `## ` section of a long-memory file as a memory entry (type 'long'). */
export function longEntry(s: Section): MemoryEntry {
  const slug = s.heading
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
  return {
    id: `long:${s.file}#${slug}`,
    type: 'long',
    content: cap(`${s.heading}: ${s.body}`),
    timestamp: new Date(s.mtime).toISOString(),
    metadata: { actionId: '', step: 0, file: s.file, section: s.heading, channel: s.file },
  };
}

/** Without a model: the first clause of each step, repeated ones once, in order, cut to fit 500 characters. */
export function extractiveSummary(entries: MemoryEntry[]): string {
  const seen = new Set<string>();
  const bits: string[] = [];
  for (const e of entries) {
    const first = e.content
      .split(/(?<=[.!?])\s|\n/)[0]!
      .trim()
      .slice(0, 80);
    const key = first.toLowerCase();
    if (!first || seen.has(key)) continue;
    seen.add(key);
    bits.push(first);
  }
  const head = `${entries.length} steps from ${entries[0]?.timestamp ?? ''} to ${entries.at(-1)?.timestamp ?? ''}: `;
  return cap(head + bits.join('; '));
}

/** A memory entry id: `mem_<kind initial>_<epoch ms>_<random>`. */
export function newId(kind: string): string {
  return `mem_${kind[0]}_${Date.now()}_${randomBytes(4).toString('hex')}`;
}
