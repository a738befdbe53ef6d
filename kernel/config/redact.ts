/**
 * Masking secrets for display: enough of a prefix to tell two keys apart ("sk-a****"),
 * never enough to use one. Short values show nothing, since a prefix of a short secret is most of it.
 */

const MASK = '****';

/** Names that suggest a secret, for keys no loaded plugin declares (so no `secret` flag is known). */
const SECRET_NAME = /key|token|secret|password/i;

export function looksSecret(name: string): boolean {
  return SECRET_NAME.test(name);
}

/**
 * `sk-abcdefghijkl` -> `sk-a****`; 8-11 characters -> 2 shown; under 8 -> `****`.
 * Empty and absent values stay as they are: masking them would claim a secret is set when none is.
 * Non-strings (a secret object, a number) are masked whole.
 */
export function mask(value: unknown): unknown {
  if (value === undefined || value === null || value === '') return value;
  if (typeof value !== 'string') return MASK;
  const shown = value.length >= 12 ? 4 : value.length >= 8 ? 2 : 0;
  return value.slice(0, shown) + MASK;
}

/**
 * For values no spec describes (a file key of a plugin not loaded): mask the whole value when its
 * name looks secret, and inside objects every property whose name does.
 */
export function maskByName(name: string, value: unknown, depth = 0): unknown {
  if (looksSecret(name)) return mask(value);
  if (value === null || typeof value !== 'object' || depth > 8) return value;
  if (Array.isArray(value)) return value.map((v) => maskByName('', v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = maskByName(k, v, depth + 1);
  return out;
}
