/**
 * Building a new action from what a producer gave (SPEC "Action"): id, priority clamping, defaults.
 * Kept free of runtime imports beyond node built-ins and errors.ts: `keel push` loads it on its fast path.
 */
import { randomBytes } from 'node:crypto';
import type { Action, Logger, PushInput } from '../../sdk/types.js';
import { ErrorCodes, KeelError } from '../errors.js';

export const DEFAULT_PRIORITY = 5;
export const MIN_PRIORITY = 1;
export const MAX_PRIORITY = 10;
export const DEFAULT_MAX_RETRIES = 3;
export const DEFAULT_TTL_MS = 3_600_000;
export const LOG_TASK_MAX = 1000;

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/**
 * `act_<epoch_ms>_<8 base36 chars>`. The suffix is random rather than a counter because several processes
 * (runner, `keel push`, gateway) mint ids for the same queue in the same millisecond.
 */
export function newActionId(now: number): string {
  const bytes = randomBytes(8);
  let suffix = '';
  // 256 % 36 leaves a slight bias towards the first characters: irrelevant for uniqueness at 41 bits.
  for (const b of bytes) suffix += ALPHABET[b % 36];
  return `act_${Math.floor(now)}_${suffix}`;
}

/**
 * Priority as SPEC wants it: out-of-range numbers are clamped (not an error), but something that is not a number
 * at all is a mistake worth reporting rather than silently becoming 5.
 */
export function normalizePriority(value: unknown): number {
  if (value === undefined || value === null) return DEFAULT_PRIORITY;
  let n: number | undefined;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'string' && value.trim() !== '') n = Number(value.trim());
  if (n === undefined || Number.isNaN(n)) {
    throw new KeelError(
      ErrorCodes.PRIORITY_INVALID,
      `Priority must be a number from 1 to 10 (higher runs first); got ${describe(value)}.`,
      { priority: describe(value) },
    );
  }
  return Math.min(MAX_PRIORITY, Math.max(MIN_PRIORITY, Math.round(n)));
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') return String(value);
  if (typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object';
  return typeof value;
}

function nonNegativeInteger(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new KeelError(ErrorCodes.INVALID_INPUT, `${name} must be a whole number of 0 or more; got ${describe(value)}.`);
  }
  return value;
}

/** Validates the input and builds a pending action. Throws before anything is queued. */
export function createAction(input: PushInput, now: number): Action {
  if (input === null || typeof input !== 'object') {
    throw new KeelError(ErrorCodes.TASK_EMPTY, 'A task is required: give the instruction to carry out as text.');
  }
  if (typeof input.task !== 'string' || input.task.trim() === '') {
    throw new KeelError(
      ErrorCodes.TASK_EMPTY,
      typeof input.task === 'string'
        ? 'The task is empty: give the instruction to carry out as text.'
        : `The task must be text; got ${describe(input.task)}.`,
    );
  }
  const priority = normalizePriority(input.priority);
  const maxRetries = nonNegativeInteger('maxRetries', input.maxRetries, DEFAULT_MAX_RETRIES);
  const ttl = input.ttl === undefined ? DEFAULT_TTL_MS : input.ttl;
  if (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl < 1) {
    throw new KeelError(ErrorCodes.INVALID_INPUT, `ttl must be a number of milliseconds of 1 or more; got ${describe(ttl)}.`);
  }
  const extra = input.metadata ?? {};
  if (typeof extra !== 'object' || Array.isArray(extra)) {
    throw new KeelError(ErrorCodes.INVALID_INPUT, 'metadata must be an object.');
  }
  if (extra.notBefore !== undefined && (typeof extra.notBefore !== 'number' || !Number.isFinite(extra.notBefore))) {
    throw new KeelError(ErrorCodes.INVALID_INPUT, 'metadata.notBefore must be an epoch time in milliseconds.');
  }
  const source = typeof input.source === 'string' && input.source !== '' ? input.source : 'cli';
  return {
    id: newActionId(now),
    task: input.task,
    priority,
    status: 'pending',
    createdAt: new Date(now).toISOString(),
    source,
    // The bookkeeping fields come last so a producer's metadata cannot forge retries or lift the TTL.
    metadata: {
      ...extra,
      retries: 0,
      maxRetries,
      ttl: Math.round(ttl),
      ...(input.actor ? { actor: input.actor } : {}),
    },
  };
}

/** Epoch ms after which the action is expired (SPEC: TTL counts from createdAt). */
export function expiresAt(action: Action): number {
  return Date.parse(action.createdAt) + action.metadata.ttl;
}

/** For log lines only: SPEC lets long task descriptions be shortened in logs, never in the action itself. */
export function truncateForLog(task: string, max: number = LOG_TASK_MAX): string {
  if (task.length <= max) return task;
  return `${task.slice(0, max)}... (${task.length - max} more characters)`;
}

/** Retry n (1-based) waits 1 s, 2 s, 4 s, ... (SPEC "Retry backoff"). */
export function backoffMs(retry: number): number {
  return 1000 * 2 ** (retry - 1);
}

/** The queues' default logger: warnings and errors on the console. */
export const consoleLog: Logger = {
  debug() {},
  info() {},
  warn: (m, ...r) => console.warn(m, ...r),
  error: (m, ...r) => console.error(m, ...r),
};

/** Callers get copies: a queue's own objects change as it works. */
export function copyAction(a: Action): Action {
  return { ...a, metadata: { ...a.metadata } };
}
