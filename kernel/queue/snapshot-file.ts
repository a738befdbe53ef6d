/**
 * `actions.json`: the compacted base of the queue. SPEC asks for a JSON object with an `actions` array; the other
 * fields are ours: the completed and failed groups, and which journal (and how much of it) this base absorbed.
 */
import { readFileSync } from 'node:fs';
import type { Action } from '../../sdk/types.js';
import { isActionLike } from './ops.js';
import type { QueueSnapshot } from './store.js';

export interface SnapshotFile extends QueueSnapshot {
  /** Id of the journal whose ops up to `journalOffset` are already folded in. */
  journal?: string;
  /** Byte offset in that journal up to which ops are folded in. */
  journalOffset?: number;
}

export type SnapshotRead =
  | { kind: 'missing' }
  | { kind: 'corrupt'; reason: string }
  | { kind: 'ok'; file: SnapshotFile; invalid: string[] };

export const emptySnapshot = (): QueueSnapshot => ({ actions: [], completed: [], failed: [] });

export function readSnapshot(path: string): SnapshotRead {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing' };
    throw e;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    return { kind: 'corrupt', reason: `not valid JSON (${(e as Error).message})` };
  }
  if (!raw || typeof raw !== 'object' || !Array.isArray((raw as { actions?: unknown }).actions)) {
    return { kind: 'corrupt', reason: 'no "actions" array' };
  }
  const r = raw as Record<string, unknown>;
  const invalid: string[] = [];
  const group = (name: 'actions' | 'completed' | 'failed'): Action[] => {
    const list = r[name];
    if (list === undefined) return [];
    if (!Array.isArray(list)) {
      invalid.push(`"${name}" is not an array`);
      return [];
    }
    const out: Action[] = [];
    list.forEach((a, i) => {
      if (isActionLike(a)) out.push(a);
      else invalid.push(`${name}[${i}] is not a valid action: ${JSON.stringify(a)?.slice(0, 200)}`);
    });
    return out;
  };
  const file: SnapshotFile = { actions: group('actions'), completed: group('completed'), failed: group('failed') };
  const stops = readStops(r.stops, invalid);
  if (stops) file.stops = stops;
  if (typeof r.journal === 'string') file.journal = r.journal;
  if (typeof r.journalOffset === 'number') file.journalOffset = r.journalOffset;
  return { kind: 'ok', file, invalid };
}

/** The `stops` field (executing actions the operator stopped): entries that are not `{reason, at}` are reported. */
function readStops(v: unknown, invalid: string[]): QueueSnapshot['stops'] {
  if (v === undefined) return undefined;
  if (!v || typeof v !== 'object' || Array.isArray(v)) {
    invalid.push('"stops" is not an object');
    return undefined;
  }
  const out: NonNullable<QueueSnapshot['stops']> = {};
  for (const [id, s] of Object.entries(v)) {
    const x = s as { reason?: unknown; at?: unknown } | null;
    if (x && typeof x.reason === 'string' && typeof x.at === 'number' && Number.isFinite(x.at)) out[id] = { reason: x.reason, at: x.at };
    else invalid.push(`stops.${id} is not a valid stop: ${JSON.stringify(s)?.slice(0, 200)}`);
  }
  return Object.keys(out).length ? out : undefined;
}

/** One action per line: still one JSON object, but diffable and readable by a human with `less`. */
export function encodeSnapshot(s: QueueSnapshot, journal: string, journalOffset: number): string {
  const list = (xs: Action[]) => (xs.length ? `\n${xs.map((a) => JSON.stringify(a)).join(',\n')}\n` : '');
  return (
    `{"actions":[${list(s.actions)}],\n"completed":[${list(s.completed)}],\n"failed":[${list(s.failed)}],\n` +
    (s.stops ? `"stops":${JSON.stringify(s.stops)},\n` : '') +
    `"journal":${JSON.stringify(journal)},"journalOffset":${journalOffset}}\n`
  );
}
