/**
 * Argument validators for skills, compiled once per skill with ajv (defaults filled in, no coercion).
 */
import { Ajv, type ErrorObject } from 'ajv';
import type { TSchema } from 'typebox';
import type { ArgValidator } from './registry.js';

let ajv: Ajv | undefined;
let trustedAjv: Ajv | undefined;

/** For schemas from plugins: each is checked against the JSON Schema meta-schema first (a clear error when broken). */
function instance(): Ajv {
  ajv ??= new Ajv({ strict: false, useDefaults: true, allErrors: false, coerceTypes: false });
  return ajv;
}

/**
 * For the kernel's own schemas (TypeBox, tested): not checked against the meta-schema, whose compile costs some
 * 50 ms, paid then only when a schema from outside (a user plugin's) needs it.
 */
function trusted(): Ajv {
  trustedAjv ??= new Ajv({ strict: false, useDefaults: true, allErrors: false, coerceTypes: false, validateSchema: false });
  return trustedAjv;
}

/** Human message for the first ajv error, naming the field. */
export function describeAjvError(e: ErrorObject | undefined, root = 'arguments'): string {
  if (!e) return `${root} are invalid`;
  const path = e.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : '';
  if (e.keyword === 'required') {
    const missing = (e.params as { missingProperty: string }).missingProperty;
    return `${path ? `${path}.` : ''}${missing} is required`;
  }
  if (e.keyword === 'additionalProperties') {
    const extra = (e.params as { additionalProperty: string }).additionalProperty;
    return `${path ? `${path}.` : ''}${extra} is not a known parameter`;
  }
  return `${path || root} ${e.message ?? 'is invalid'}`;
}

/** A skill's argument validator, compiled now, its schema checked against the meta-schema (a plugin's schema). */
export function compileArgs(schema: TSchema, trustedSchema = false): ArgValidator {
  const validate = (trustedSchema ? trusted() : instance()).compile(schema as object);
  return (args) => (validate(args) ? undefined : describeAjvError(validate.errors?.[0]));
}

/**
 * For built-in plugins (their schemas tested with them): compiled at the skill's first validation, without the
 * meta-schema check, so a start compiles none of them and a skill never used costs nothing.
 */
export function lazyArgs(schema: TSchema): ArgValidator {
  let validate: ArgValidator | undefined;
  return (args) => (validate ??= compileArgs(schema, true))(args);
}

/**
 * Compile a schema of the kernel's own (manifest checks); returns the first error message or undefined. `trustedSchema`
 * false: a schema from elsewhere, checked against the meta-schema first.
 */
export function compileSchema(schema: object, trustedSchema = true): (value: unknown) => string | undefined {
  const validate = (trustedSchema ? trusted() : instance()).compile(schema);
  return (value) => (validate(value) ? undefined : describeAjvError(validate.errors?.[0], 'manifest'));
}
