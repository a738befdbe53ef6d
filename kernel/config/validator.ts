/**
 * Schema validation with ajv, paid for only when needed.
 *
 * ajv costs ~100 ms to import and a few ms per compile, which would dominate `keel push`.
 * So: the simple shapes most config keys have are checked inline; ajv is required
 * synchronously on the first schema that needs it, and each schema is compiled once
 * (cached by schema object, so a plugin reloaded with a new manifest gets a fresh compile).
 */
import { createRequire } from 'node:module';
import type { Ajv, ValidateFunction } from 'ajv';
import type { TSchema } from 'typebox';
import { describeSchema, literalsOf } from './schema-text.js';

let ajv: Ajv | undefined;
const compiled = new WeakMap<object, ValidateFunction | Error>();

function getAjv(): Ajv {
  if (!ajv) {
    // createRequire keeps the call synchronous (validate is used on hot, sync paths) yet lazy.
    const mod = createRequire(import.meta.url)('ajv') as { Ajv: new (opts: object) => Ajv };
    // strict:false because TypeBox may carry annotations ajv does not know; logger:false keeps
    // ajv from printing to the console behind the kernel's logger.
    // verbose: an error carries the sub-schema that failed, so a nested value's message names its form.
    ajv = new mod.Ajv({ strict: false, allErrors: false, logger: false, verbose: true });
  }
  return ajv;
}

/** Annotations that never change whether a value is valid (TypeBox's own markers start with `~`). */
const ANNOTATIONS = new Set(['description', 'title', 'default', 'examples', '$comment', '$id', 'readOnly', 'writeOnly']);

function onlyKeys(schema: Record<string, unknown>, handled: readonly string[]): boolean {
  for (const k of Object.keys(schema)) if (!handled.includes(k) && !ANNOTATIONS.has(k) && !k.startsWith('~')) return false;
  return true;
}

function isPrimitive(v: unknown): boolean {
  return v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}

/**
 * true/false for the shapes most config keys have (a primitive type with an optional numeric range,
 * an enum of literals, an array of plain strings); undefined for anything else, which goes to ajv.
 */
function quickCheck(schema: Record<string, unknown>, value: unknown): boolean | undefined {
  const t = schema['type'];
  if (t === 'boolean' || t === 'string') return onlyKeys(schema, ['type']) ? typeof value === t : undefined;
  if (t === 'number' || t === 'integer') {
    if (!onlyKeys(schema, ['type', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'])) return undefined;
    if (typeof value !== 'number' || !Number.isFinite(value) || (t === 'integer' && !Number.isInteger(value))) return false;
    const { minimum: min, maximum: max, exclusiveMinimum: xmin, exclusiveMaximum: xmax } = schema;
    if (typeof min === 'number' && value < min) return false;
    if (typeof max === 'number' && value > max) return false;
    if (typeof xmin === 'number' && value <= xmin) return false;
    if (typeof xmax === 'number' && value >= xmax) return false;
    return true;
  }
  if (t === 'array') {
    const items = schema['items'] as Record<string, unknown> | undefined;
    if (!onlyKeys(schema, ['type', 'items']) || !items || items['type'] !== 'string' || !onlyKeys(items, ['type'])) return undefined;
    return Array.isArray(value) && value.every((v) => typeof v === 'string');
  }
  if (t === undefined && isLiteralUnion(schema)) {
    const lits = literalsOf(schema) ?? [];
    if (lits.every(isPrimitive)) return lits.includes(value);
  }
  return undefined;
}

/** `enum: [...]`, or `anyOf` of `{ const }` (TypeBox's Union of Literals, which adds a `type`). */
function isLiteralUnion(schema: Record<string, unknown>): boolean {
  if (Array.isArray(schema['enum'])) return onlyKeys(schema, ['enum']);
  const alts = schema['anyOf'];
  if (!Array.isArray(alts) || !onlyKeys(schema, ['anyOf'])) return false;
  return alts.every((a: Record<string, unknown>) => a !== null && typeof a === 'object' && 'const' in a && onlyKeys(a, ['const', 'type']));
}

/**
 * Check a value against a schema. Returns undefined when valid, else a sentence
 * naming what was expected. A schema ajv cannot compile rejects every value (fail closed).
 */
export function checkValue(schema: TSchema, value: unknown, opts: { showValue?: boolean } = {}): string | undefined {
  // Strings are not echoed unless the caller says the key is not secret: error messages get logged.
  const got = (): string => typeName(value, opts.showValue === true);
  const s = schema as unknown as Record<string, unknown>;
  const quick = quickCheck(s, value);
  if (quick === true) return undefined;
  if (quick === false) return `expected ${describeSchema(schema)}, got ${got()}`;
  let fn = compiled.get(s);
  if (!fn) {
    try {
      fn = getAjv().compile(s);
    } catch (e) {
      fn = e instanceof Error ? e : new Error(String(e));
    }
    compiled.set(s, fn);
  }
  if (fn instanceof Error) return `its schema is unusable (${fn.message})`;
  if (fn(value)) return undefined;
  const first = fn.errors?.[0];
  const where = first?.instancePath ? ` (at ${first.instancePath}: ${nestedProblem(first)})` : '';
  return `expected ${describeSchema(schema)}, got ${got()}${where}`;
}

/** What is wrong with a value inside an object or array: the form its own schema wants, in words. */
function nestedProblem(e: { keyword: string; message?: string; parentSchema?: unknown; data?: unknown }): string {
  const form = ['pattern', 'minLength', 'maxLength', 'format'].includes(e.keyword) && e.parentSchema ? describeSchema(e.parentSchema) : '';
  // Nested values are shown only by length: the key may be a secret one.
  return form ? `expected ${form}, got ${typeName(e.data, false)}` : (e.message ?? 'invalid');
}

function typeName(value: unknown, showValue: boolean): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') {
    if (value === '') return 'an empty string';
    // A secret is never echoed, but its length tells a cut-off paste from a wrong kind of value.
    if (!showValue) return `a string of ${value.length} character${value.length === 1 ? '' : 's'}`;
    return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value)}`;
  }
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${String(value)}`;
  if (value instanceof Date) return 'a date';
  return typeof value === 'object' ? 'an object' : typeof value;
}
