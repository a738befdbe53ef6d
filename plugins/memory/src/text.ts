/** Small text rules: the 500-character cap, tokens for keyword search, secrets, the USER.md section of a fact. */
import { hasSecretShape } from '../../../sdk/secret-shapes.js';
import type { UserSection } from './long-files.js';

export const ENTRY_CAP = 500;
export const TRUNCATION_MARKER = ' …[truncated]';

/** Cut to `cap` characters in all, the marker included, so a cut is visible. */
export function cap(text: string, max = ENTRY_CAP): string {
  if (text.length <= max) return text;
  return text.slice(0, max - TRUNCATION_MARKER.length) + TRUNCATION_MARKER;
}

const STOP = new Set(
  'a an and are as at be but by did do does for from had has have how i in is it its me my of on or our so that the their them then there these they this to was we were what when where which who why will with you your about into any can could would should please remember recall find search memory memories'.split(
    ' ',
  ),
);

/** Lower-case word tokens of two or more characters, without common words; a trailing plural `s` is dropped. */
export function tokens(text: string): string[] {
  const out: string[] = [];
  for (const m of text.toLowerCase().matchAll(/[\p{L}\p{N}]{2,}/gu)) {
    let t = m[0];
    if (STOP.has(t)) continue;
    if (t.length > 3 && t.endsWith('s') && !t.endsWith('ss')) t = t.slice(0, -1);
    out.push(t);
  }
  return out;
}

/** Key shapes beyond the SDK's credential shapes (sdk/secret-shapes.ts): publishable and restricted keys. */
const SECRET_VALUE = [/\b(pk|rk)-[A-Za-z0-9_-]{16,}/];
const SECRET_WORD =
  /\b(pass(word|wd|phrase|code)?|pwd|pin|secret|api[\s_-]?key|access[\s_-]?key|token|credential|private[\s_-]?key|otp|2fa code)s?\b/i;
const ASSIGNMENT =
  /\b(pass(word|wd|phrase|code)?|pwd|pin|secret|api[\s_-]?key|access[\s_-]?key|token|credential|private[\s_-]?key|otp)s?\b\s*(is|was|are|=|:|->)\s*["'`]?\S{3,}/i;

/** Why `text` looks like it holds a password, key or token; undefined when it does not. */
export function secretReason(text: string): string | undefined {
  if (hasSecretShape(text) || SECRET_VALUE.some((r) => r.test(text)))
    return 'it contains something shaped like an API key, token or private key';
  if (ASSIGNMENT.test(text)) return 'it gives a value for a password, PIN, key or token';
  // A long run of mixed letters and digits next to a secret-ish word.
  if (SECRET_WORD.test(text) && /(?=[A-Za-z0-9_+/=-]*\d)(?=[A-Za-z0-9_+/=-]*[A-Za-z])[A-Za-z0-9_+/=-]{16,}/.test(text))
    return 'it mentions a credential next to a long code';
  return undefined;
}

const CONSTRAINT =
  /\b(can ?not|can't|cannot|must( not)?|mustn't|never|not allowed|unable|allergic|allergy|allergies|intoleran\w*|avoid\w*|forbidden|restrict\w*|deadline|budget|limit(ed)?|only (on|at|before|after|in)|no later than|not available|unavailable|vegan|vegetarian|halal|kosher|disabilit\w*)\b/i;
const PREFERENCE =
  /\b(prefer\w*|like[sd]?|love[sd]?|enjoy\w*|favou?rite|hate[sd]?|dislike[sd]?|would rather|rather|want[sd]?|wish(es)?|interested|fan of|into|style|usually|tends? to)\b/i;

/**
 * USER.md section of a fact, by keyword rules: limits and obligations (cannot, never, must, allergic, avoid,
 * budget, deadline, diets...) are Constraints; tastes (prefers, likes, loves, favourite, hates, wants...) are
 * Preferences; anything else (name, job, home, family, language, time zone) is Core Identity.
 */
export function classifyFact(text: string): UserSection {
  if (CONSTRAINT.test(text)) return 'Constraints';
  if (PREFERENCE.test(text)) return 'Preferences';
  return 'Core Identity';
}
