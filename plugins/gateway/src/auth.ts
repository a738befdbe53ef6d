/**
 * API key checks, in constant time (the comparison never tells how much of a wrong key was right).
 */
import { createHash, timingSafeEqual } from 'node:crypto';

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/** Compares a provided key with the expected one without leaking length or prefix through timing. */
export function keyMatches(provided: unknown, expected: string): boolean {
  if (typeof provided !== 'string' || provided.length === 0) return false;
  return timingSafeEqual(digest(provided), digest(expected));
}

/** The 401 body of SPEC: `{error: 'Unauthorized', message}` saying whether the key is missing or invalid. */
export function unauthorized(provided: unknown, where: 'header X-Api-Key' | 'query parameter apiKey'): { error: 'Unauthorized'; message: string } {
  const missing = typeof provided !== 'string' || provided.length === 0;
  return {
    error: 'Unauthorized',
    message: missing ? `API key missing: send it in the ${where}.` : `API key invalid: the ${where} does not match the gateway's key.`,
  };
}
