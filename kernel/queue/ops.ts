/**
 * The journal's vocabulary: one JSON line per state change. Every op carries absolute values (retries,
 * notBefore, timestamps) rather than deltas, so replaying an op twice lands in the same state.
 */
import type { Action } from '../../sdk/types.js';

/**
 * `by` names the runner (a worker of a shared store) that took the action. A `start` with `by` is a claim: the first
 * in the stream wins. A settle or requeue with `by` applies only while that runner still holds the action, which
 * fences off a runner whose lease lapsed and whose action another runner took over. Absent (the file store's single
 * runner), no such check is made.
 */
export type QueueOp =
  | { op: 'push'; action: Action }
  | { op: 'start'; id: string; by?: string }
  | { op: 'complete'; id: string; result: string; at: number; by?: string }
  | { op: 'retry'; id: string; retries: number; notBefore: number; error: string; by?: string }
  | { op: 'fail'; id: string; error: string; at: number; by?: string }
  /** A crashed runner's executing action goes back to pending (not a retry). */
  | { op: 'requeue'; id: string; by?: string }
  | { op: 'remove'; id: string; reason: string }
  /**
   * The operator stopped an executing action (from any process or machine): the runner holding it aborts it, and it
   * ends failed with `reason`, never retried, never run again (a requeue after its runner died fails it instead).
   */
  | { op: 'stop'; id: string; reason: string; at: number }
  /** A pending action's task and metadata, changed in place (its id, priority, schedule and place in line kept). */
  | { op: 'amend'; id: string; task: string; metadata: Action['metadata'] };

export interface JournalHeader {
  keel: 'actions-journal';
  v: 1;
  /** Random per journal file: a snapshot names the journal it absorbed. */
  id: string;
}

export function encodeOp(op: QueueOp): string {
  return `${JSON.stringify(op)}\n`;
}

export function encodeHeader(id: string): string {
  const h: JournalHeader = { keel: 'actions-journal', v: 1, id };
  return `${JSON.stringify(h)}\n`;
}

export function decodeHeader(line: string): JournalHeader | undefined {
  try {
    const h = JSON.parse(line) as Partial<JournalHeader>;
    if (h && h.keel === 'actions-journal' && typeof h.id === 'string' && h.id !== '') return h as JournalHeader;
  } catch {
    // fall through: not a header
  }
  return undefined;
}

const isStr = (v: unknown): v is string => typeof v === 'string';
const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** Minimal shape check: enough that applying the action cannot throw or poison the in-memory indexes. */
export function isActionLike(a: unknown): a is Action {
  if (!a || typeof a !== 'object') return false;
  const x = a as Partial<Action>;
  return (
    isStr(x.id) &&
    isStr(x.task) &&
    isNum(x.priority) &&
    isStr(x.status) &&
    isStr(x.createdAt) &&
    !!x.metadata &&
    typeof x.metadata === 'object' &&
    isNum(x.metadata.retries) &&
    isNum(x.metadata.maxRetries) &&
    isNum(x.metadata.ttl)
  );
}

/** Parses one journal line; throws with the reason when the line is not a valid op. */
export function decodeOp(line: string): QueueOp {
  const o = JSON.parse(line) as Record<string, unknown>;
  if (!o || typeof o !== 'object') throw new Error('not an object');
  if (o.by !== undefined && !isStr(o.by)) throw new Error(`not a valid queue op: ${line.slice(0, 120)}`);
  const ok = (() => {
    switch (o.op) {
      case 'push':
        return isActionLike(o.action);
      case 'start':
      case 'requeue':
        return isStr(o.id);
      case 'complete':
        return isStr(o.id) && isStr(o.result) && isNum(o.at);
      case 'retry':
        return isStr(o.id) && isNum(o.retries) && isNum(o.notBefore) && isStr(o.error);
      case 'fail':
        return isStr(o.id) && isStr(o.error) && isNum(o.at);
      case 'remove':
        return isStr(o.id) && isStr(o.reason);
      case 'stop':
        return isStr(o.id) && isStr(o.reason) && isNum(o.at);
      case 'amend':
        return isStr(o.id) && isStr(o.task) && !!o.metadata && typeof o.metadata === 'object';
      default:
        return false;
    }
  })();
  if (!ok) throw new Error(`not a valid queue op: ${line.slice(0, 120)}`);
  return o as unknown as QueueOp;
}
