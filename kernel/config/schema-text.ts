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
      // A key whose form is narrower than "a string" (a token prefix) names it in its `title`.
      return typeof s['title'] === 'string' && s['title'] ? s['title'] : 'a string';
    case 'null':
      return 'null';
    case 'array':
      return depth > 1 ? 'an array' : `an array of ${plural(describeSchema(s['items'], depth + 1))}`;
    case 'object': {
      const props = asObj(s['properties']);
      if (props && Object.keys(props).length > 0) return `an object with keys ${Object.keys(props).join(', ')}`;
      const pattern = asObj(s['patternProperties']);
      const valueSchema = pattern ? Object.values(pattern)[0] : s['additionalProperties'];
      if (asObj(valueSchema) && depth <= 1) return `an object whose values are ${plural(describeSchema(valueSchema, depth + 1))}`;
      return 'an object';
    }
    default: {
      const alts = (s['anyOf'] ?? s['oneOf']) as unknown;
      if (Array.isArray(alts)) return alts.map((a) => describeSchema(a, depth + 1)).join(' or ');
      return 'any value';
    }
  }
}

function range(s: Json): string {
  const min = s['minimum'];
  const max = s['maximum'];
  if (typeof min === 'number' && typeof max === 'number') return ` from ${min} to ${max}`;
  if (typeof min === 'number') return ` of at least ${min}`;
  if (typeof max === 'number') return ` of at most ${max}`;
  return '';
}

function plural(text: string): string {
  // "a string" -> "strings"; anything we cannot pluralise cleanly reads fine as "values: ...".
  const m = /^an? (boolean|number|integer|string|array|object)\b(.*)$/.exec(text);
  if (m) return `${m[1]}s${m[2]}`;
  return `values (${text})`;
}
