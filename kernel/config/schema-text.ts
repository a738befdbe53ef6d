/**
 * Reading a key's JSON schema the way a person would: what kind of value it wants, in words.
 * Used for error messages ("expected a number") and to parse strings from the environment and the CLI.
 */
import type { TSchema } from 'typebox';

export type SchemaKind = 'boolean' | 'number' | 'integer' | 'string' | 'array' | 'object' | 'null' | 'unknown';

type Json = Record<string, unknown>;

function asObj(s: unknown): Json | undefined {
  return s !== null && typeof s === 'object' && !Array.isArray(s) ? (s as Json) : undefined;
}

/** The literal values a schema allows, when it is an enum (`enum`, `const`, or `anyOf` of consts). */
export function literalsOf(schema: TSchema | unknown): unknown[] | undefined {
  const s = asObj(schema);
  if (!s) return undefined;
  if (Array.isArray(s['enum'])) return s['enum'] as unknown[];
  if ('const' in s) return [s['const']];
  const alts = (s['anyOf'] ?? s['oneOf']) as unknown;
  if (Array.isArray(alts) && alts.length > 0) {
    const out: unknown[] = [];
    for (const alt of alts) {
      const lits = literalsOf(alt);
      if (!lits) return undefined;
      out.push(...lits);
    }
    return out;
  }
  return undefined;
}

/** The single JSON type a schema wants, or 'unknown' for unions of different types and open schemas. */
export function kindOf(schema: TSchema | unknown): SchemaKind {
  const s = asObj(schema);
  if (!s) return 'unknown';
  const t = s['type'];
  if (typeof t === 'string')
    return (['boolean', 'number', 'integer', 'string', 'array', 'object', 'null'] as const).find((k) => k === t) ?? 'unknown';
  const lits = literalsOf(s);
  if (lits && lits.length > 0) {
    const kinds = new Set(lits.map((v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v)));
    if (kinds.size === 1) {
      const only = [...kinds][0];
      if (only === 'string' || only === 'boolean' || only === 'number') return only;
    }
    return 'unknown';
  }
  const alts = (s['anyOf'] ?? s['oneOf']) as unknown;
  if (Array.isArray(alts) && alts.length > 0) {
    const kinds = new Set(alts.map((a) => kindOf(a)));
    if (kinds.size === 1) return [...kinds][0] as SchemaKind;
  }
  return 'unknown';
}

/** Schema of the items of an array schema (or undefined). */
export function itemsOf(schema: TSchema | unknown): unknown {
  return asObj(schema)?.['items'];
}

/** "a number", "one of: main, per-peer", "an array of strings" ... */
export function describeSchema(schema: TSchema | unknown, depth = 0): string {
  const s = asObj(schema);
  if (!s) return 'any value';
  const lits = literalsOf(s);
  if (lits && lits.length > 0) {
    return lits.length === 1
      ? `the value ${JSON.stringify(lits[0])}`
      : `one of: ${lits.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(', ')}`;
  }
  const kind = kindOf(s);
  switch (kind) {
    case 'boolean':
      return 'a boolean (true or false)';
    case 'integer':
      return `an integer${range(s)}`;
    case 'number':
      return `a number${range(s)}`;
    case 'string':
      // A union of string forms (names, or a patterned id) is told alternative by alternative.
      if (s['type'] === undefined && Array.isArray(s['anyOf'] ?? s['oneOf'])) return alternatives(s, depth);
      return describeString(s);
    case 'null':
      return 'null';
    case 'array':
      return depth > 1 ? 'an array' : each('an array of', 'an array whose items are each', describeSchema(s['items'], depth + 1));
    case 'object': {
      const props = asObj(s['properties']);
      if (props && Object.keys(props).length > 0) return `an object with keys ${Object.keys(props).join(', ')}`;
      const pattern = asObj(s['patternProperties']);
      const valueSchema = pattern ? Object.values(pattern)[0] : s['additionalProperties'];
      if (asObj(valueSchema) && depth <= 1)
        return each('an object whose values are', 'an object whose values are each', describeSchema(valueSchema, depth + 1));
      return 'an object';
    }
    default:
      return alternatives(s, depth);
  }
}

function alternatives(s: Json, depth: number): string {
  const alts = (s['anyOf'] ?? s['oneOf']) as unknown;
  if (Array.isArray(alts)) return alts.map((a) => describeSchema(a, depth + 1)).join(' or ');
  return 'any value';
}

/**
 * A string schema in words. A key whose form is narrower than "a string" (a token, an address) names it in its
 * `title` ("a Telegram bot token: ..."), which is used as it is; without one, a URL-scheme pattern (`^https?://`)
 * and the length limits are put in words, and any other pattern is shown as the regular expression.
 */
function describeString(s: Json): string {
  const title = s['title'];
  if (typeof title === 'string' && title) return title;
  const pattern = typeof s['pattern'] === 'string' ? s['pattern'] : undefined;
  const schemes = pattern ? urlSchemes(pattern) : undefined;
  const min = typeof s['minLength'] === 'number' ? s['minLength'] : 0;
  const max = typeof s['maxLength'] === 'number' ? s['maxLength'] : undefined;
  if (schemes)
    return `a URL starting with ${orList(schemes.map((x) => `${x}://`))}${max !== undefined ? ` (at most ${max} characters)` : ''}`;
  const base = min === 1 && max === undefined ? 'a non-empty string' : `a string${lengthText(min, max)}`;
  return pattern ? `${base} matching the regular expression /${pattern}/` : base;
}

function lengthText(min: number, max: number | undefined): string {
  if (max !== undefined && min > 0) return min === max ? ` of exactly ${min} characters` : ` of ${min} to ${max} characters`;
  if (max !== undefined) return ` of at most ${max} characters`;
  if (min > 1) return ` of at least ${min} characters`;
  if (min === 1) return ' that is not empty';
  return '';
}

/** `^https?://` -> [http, https]; `^(wss?|https?)://` -> [ws, wss, http, https]; other patterns: undefined. */
function urlSchemes(pattern: string): string[] | undefined {
  const m = /^\^(?:\(([a-z?|]+)\)|([a-z?]+)):\/\/(?:\.[+*])?$/.exec(pattern);
  const alts = (m?.[1] ?? m?.[2])?.split('|');
  if (!alts) return undefined;
  const out: string[] = [];
  for (const alt of alts) {
    const opt = /^([a-z]+)([a-z])\?$/.exec(alt);
    if (opt) out.push(opt[1] as string, `${opt[1]}${opt[2]}`);
    else if (/^[a-z]+$/.test(alt)) out.push(alt);
    else return undefined;
  }
  return out;
}

function orList(xs: string[]): string {
  return xs.length <= 1 ? (xs[0] ?? '') : `${xs.slice(0, -1).join(', ')} or ${xs[xs.length - 1]}`;
}

function range(s: Json): string {
  const min = s['minimum'];
  const max = s['maximum'];
  if (typeof min === 'number' && typeof max === 'number') return ` from ${min} to ${max}`;
  if (typeof min === 'number') return ` of at least ${min}`;
  if (typeof max === 'number') return ` of at most ${max}`;
  return '';
}

/** "an array of strings" when the item reads in the plural, else "an array whose items are each <item>". */
function each(plural: string, single: string, item: string): string {
  // "a string" -> "strings", "a non-empty string" -> "non-empty strings", "an integer of at least 1" -> "integers of ..."
  const m = /^an? (non-empty )?(boolean|number|integer|string|array|object)\b(.*)$/.exec(item);
  return m ? `${plural} ${m[1] ?? ''}${m[2]}s${m[3]}` : `${single} ${item}`;
}
