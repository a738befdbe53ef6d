/**
 * The manifest contract as a TypeBox schema, checked with ajv before any plugin code runs.
 */
import Type from 'typebox';
import type { PluginManifest } from '../../sdk/types.js';
import { ErrorCodes, errorMessage, KeelError } from '../errors.js';
import { compileSchema } from '../registry/validator.js';

const Id = Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_.:-]{0,63}$' });
const SkillName = Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$' });

const ConfigKey = Type.Object({
  schema: Type.Object({}, { additionalProperties: true }),
  default: Type.Optional(Type.Unknown()),
  env: Type.Optional(Type.Array(Type.String({ pattern: '^[A-Z][A-Z0-9_]*$' }))),
  policy: Type.Union([Type.Literal('SAFE'), Type.Literal('APPROVAL'), Type.Literal('LOCKED')]),
  secret: Type.Optional(Type.Boolean()),
  description: Type.String({ minLength: 1 }),
});

const Skill = Type.Object({
  name: SkillName,
  description: Type.String({ minLength: 1 }),
  category: Type.String({ minLength: 1 }),
  parameters: Type.Object({ type: Type.Literal('object') }, { additionalProperties: true }),
  isDeep: Type.Optional(Type.Boolean()),
  isResearch: Type.Optional(Type.Boolean()),
  isParallelSafe: Type.Optional(Type.Boolean()),
  isDangerous: Type.Optional(Type.Boolean()),
  adminOnly: Type.Optional(Type.Boolean()),
  isOutbound: Type.Optional(Type.Boolean()),
});

export const ManifestSchema = Type.Object({
  id: Id,
  version: Type.String({ pattern: '^\\d+\\.\\d+\\.\\d+' }),
  kind: Type.Union([Type.Literal('skill'), Type.Literal('channel'), Type.Literal('provider'), Type.Literal('service')]),
  description: Type.String({ minLength: 1 }),
  config: Type.Optional(Type.Record(Type.String({ pattern: '^[A-Za-z][A-Za-z0-9]*$' }), ConfigKey)),
  skills: Type.Optional(Type.Array(Skill)),
  requires: Type.Optional(Type.Array(Type.String())),
  provides: Type.Optional(Type.Array(Type.String())),
  permissions: Type.Optional(
    Type.Object({
      network: Type.Optional(Type.Boolean()),
      filesystem: Type.Optional(Type.Array(Type.String())),
      commands: Type.Optional(Type.Boolean()),
      secrets: Type.Optional(Type.Array(Type.String())),
    }),
  ),
  channel: Type.Optional(
    Type.Object(
      {
        name: Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_-]{0,31}$' }),
        userIdPattern: Type.String({ minLength: 1 }),
        userIdExample: Type.String({ minLength: 1 }),
      },
      { additionalProperties: false },
    ),
  ),
  cli: Type.Optional(
    Type.Array(
      Type.Object({
        name: Type.String({ minLength: 1 }),
        description: Type.String(),
        options: Type.Optional(
          Type.Array(Type.Object({ flags: Type.String(), description: Type.String(), default: Type.Optional(Type.Unknown()) })),
        ),
      }),
    ),
  ),
});

let check: ((v: unknown) => string | undefined) | undefined;

/** Throws KEEL_E_MANIFEST_INVALID naming the field and the plugin's folder. */
export function validateManifest(value: unknown, where: string): PluginManifest {
  check ??= compileSchema(ManifestSchema);
  const err = check(value);
  if (err) {
    throw new KeelError(ErrorCodes.MANIFEST_INVALID, `Invalid plugin manifest in ${where}: ${err.replace(/^manifest /, '')}.`, { where });
  }
  const problem = channelProblem(value as PluginManifest);
  if (problem) throw new KeelError(ErrorCodes.MANIFEST_INVALID, `Invalid plugin manifest in ${where}: ${problem}.`, { where });
  return value as PluginManifest;
}

/** The channel field's pattern must compile, be anchored and accept its own example; the plugin provides the channel. */
function channelProblem(m: PluginManifest): string | undefined {
  const c = m.channel;
  if (!c) return undefined;
  let re: RegExp;
  try {
    re = new RegExp(c.userIdPattern, 'u');
  } catch (e) {
    return `channel.userIdPattern is not a valid regular expression (${errorMessage(e)})`;
  }
  if (!c.userIdPattern.startsWith('^') || !c.userIdPattern.endsWith('$'))
    return 'channel.userIdPattern must be anchored (start with ^ and end with $)';
  if (!re.test(c.userIdExample))
    return `channel.userIdExample "${c.userIdExample}" does not match channel.userIdPattern ${c.userIdPattern}`;
  if (!(m.provides ?? []).includes(`channel:${c.name}`))
    return `channel.name is "${c.name}" but provides does not list "channel:${c.name}"`;
  return undefined;
}
