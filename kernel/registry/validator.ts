/**
 * Argument validators for skills, compiled once per skill with ajv (defaults filled in, no coercion).
 */
import { Ajv, type ErrorObject } from 'ajv';
import type { TSchema } from 'typebox';
import type { ArgValidator } from './registry.js';

let ajv: Ajv | undefined;

function instance(): Ajv {
  ajv ??= new Ajv({ strict: false, useDefaults: true, allErrors: false, coerceTypes: false });
  return ajv;
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

export function compileArgs(schema: TSchema): ArgValidator {
  const validate = instance().compile(schema as object);
  return (args) => (validate(args) ? undefined : describeAjvError(validate.errors?.[0]));
}

/** Compile any schema (manifest checks); returns the first error message or undefined. */
export function compileSchema(schema: object): (value: unknown) => string | undefined {
  const validate = instance().compile(schema);
  return (value) => (validate(value) ? undefined : describeAjvError(validate.errors?.[0], 'manifest'));
}
