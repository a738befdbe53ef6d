/**
 * API key checks, in constant time (the comparison never tells how much of a wrong key was right).
 */
import { hash, timingSafeEqual } from 'node:crypto';

function digest(s: string): Buffer {
  return hash('sha256', s, 'buffer');
}

/** The expected key's digest is computed once per key (this check runs on every request). */
let lastKey: string | undefined;
let lastDigest: Buffer | undefined;
function expectedDigest(expected: string): Buffer {
  if (expected !== lastKey || !lastDigest) {
    lastDigest = digest(expected);
    lastKey = expected;
  }
  return lastDigest;
}

/**
 * Compares a provided key with the expected one without leaking length or prefix through timing: both sides are
 * hashed to a fixed length, then compared with timingSafeEqual.
 */
export function keyMatches(provided: unknown, expected: string): boolean {
  if (typeof provided !== 'string' || provided.length === 0) return false;
  return timingSafeEqual(digest(provided), expectedDigest(expected));
}

/** The 401 body of SPEC: `{error: 'Unauthorized', message}` saying whether the key is missing or invalid. */
export function unauthorized(
  provided: unknown,
  where: 'header X-Api-Key' | 'query parameter apiKey',
): { error: 'Unauthorized'; message: string } {
  const missing = typeof provided !== 'string' || provided.length === 0;
  return {
    error: 'Unauthorized',
    message: missing ? `API key missing: send it in the ${where}.` : `API key invalid: the ${where} does not match the gateway's key.`,
  };
}
