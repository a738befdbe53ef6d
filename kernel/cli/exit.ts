/**
 * Exit codes of `keel` (documented in the README):
 * 0 success; 1 failure at run time; 2 invalid usage or input (nothing changed); 3 not running (status, stop).
 */
import { isKeelError, errorMessage } from '../errors.js';

export const EXIT = { OK: 0, FAILURE: 1, USAGE: 2, NOT_RUNNING: 3 } as const;

const USAGE_CODES = new Set([
  'KEEL_E_INVALID_INPUT',
  'KEEL_E_TASK_EMPTY',
  'KEEL_E_PRIORITY_INVALID',
  'KEEL_E_CONFIG_UNKNOWN_KEY',
  'KEEL_E_CONFIG_INVALID_VALUE',
  'KEEL_E_APPROVAL_NOT_FOUND',
  'KEEL_E_ACTION_NOT_FOUND',
]);

/** Print an error the way every command does, and return its exit code. */
export function reportError(e: unknown, json = false): number {
  const code = isKeelError(e) ? e.code : 'KEEL_E_FAILED';
  const message = errorMessage(e);
  if (json) process.stdout.write(`${JSON.stringify({ error: code, message })}\n`);
  else process.stderr.write(`keel: ${message}${isKeelError(e) ? ` (${e.code})` : ''}\n`);
  return USAGE_CODES.has(code) ? EXIT.USAGE : EXIT.FAILURE;
}

export class UsageError extends Error {}
