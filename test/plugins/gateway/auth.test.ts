/**
 * The API key comparison (gateway auth.ts): equal keys only; a prefix, an extension, a repetition, one character
 * off anywhere, another case, an empty or missing value are all refused.
 */
import { describe, expect, it } from 'vitest';
import { keyMatches } from '../../../plugins/gateway/src/auth.js';

const KEY = 'correct-horse-battery-staple';

describe('keyMatches', () => {
  it('accepts the key and nothing else', () => {
    expect(keyMatches(KEY, KEY)).toBe(true);
    expect(keyMatches(`${KEY}`.slice(0), KEY)).toBe(true);
    const wrong = [
      KEY.slice(0, -1),
      `${KEY}x`,
      `${KEY}${KEY}`,
      KEY.toUpperCase(),
      KEY.slice(0, 7),
      ' '.repeat(KEY.length),
      '',
      'c',
      // Read cyclically, a repeated half would match every character of a key that repeats: the lengths differ.
      'abab'.slice(0, 2),
    ];
    for (const w of wrong) expect(keyMatches(w, KEY), JSON.stringify(w)).toBe(false);
    expect(keyMatches('ab', 'abab')).toBe(false);
    expect(keyMatches('abab', 'ab')).toBe(false);
    for (let i = 0; i < KEY.length; i++) {
      const off = KEY.slice(0, i) + String.fromCharCode(KEY.charCodeAt(i) ^ 1) + KEY.slice(i + 1);
      expect(keyMatches(off, KEY), `one character off at ${i}`).toBe(false);
    }
  });

  it('refuses values that are not a non-empty string, and an empty expected key', () => {
    for (const v of [undefined, null, 42, ['x'], {}, '']) expect(keyMatches(v, KEY)).toBe(false);
    expect(keyMatches('', '')).toBe(false);
    expect(keyMatches('x', '')).toBe(false);
  });
});
