/**
 * Keel plugin SDK. Plugins import from here and nowhere else in Keel.
 *
 * @example
 * ```ts
 * import { definePlugin, Type } from 'keel/sdk';
 * export default definePlugin({
 *   manifest: { id: 'hello', version: '1.0.0', kind: 'skill', description: 'Says hello',
 *     skills: [{ name: 'hello', description: 'Greets', category: 'demo',
 *                parameters: Type.Object({ name: Type.String() }) }] },
 *   setup(ctx) { ctx.skills.register('hello', ({ name }) => `hello ${name}`); },
 * });
 * ```
 */
import Type from 'typebox';
import type { Static, TSchema } from 'typebox';
import type { PluginDefinition, SkillCallContext } from './plugin.js';
import type { PluginManifest, SkillFlags, SkillManifest } from './types.js';

export { Type };
export type { Static, TSchema };
export type * from './types.js';
export type * from './hooks.js';
export type * from './plugin.js';
export type * from './capabilities.js';
export type * from './core-capabilities.js';
export type * from './config-keys.js';
export { DEFAULT_COMMAND_ALLOW_LIST, DEFAULT_COMMAND_DENY_LIST } from './config-keys.js';
export type * from './manifest-types.js';
export { CHANNEL_NAMES } from './plugin.js';
export type * from './channel.js';
export { listChannels, offerUnconfigured, outgoing, receive, reportIgnored, setting, SPEC_CHANNELS } from './channel.js';
export type * from './gateway.js';
export { browserUrl, gatewayServesHere } from './gateway.js';
export type * from './providers.js';
export type * from './inbox.js';
export { ProviderError } from './providers.js';
export { progressLine, withProgress, type ProgressLine } from './progress.js';
export { withRetry, parseRetryAfter, sleep, bounded, type RetryOptions, type RetryDecision } from './retry.js';
export { namespaceSupport, type NamespaceKind, type NamespaceSupport } from './namespaces.js';
export {
  MAX_ACTOR_DEPTH,
  OPERATOR_SOURCES,
  AUTONOMY_SOURCE,
  chainOf,
  principalOf,
  humanBehind,
  isUntrusted,
  isAutonomous,
  describeActor,
  actorLabel,
  type ActorChain,
} from './actor.js';
export {
  approvalButtonData,
  parseApprovalButton,
  type ApprovalDecision,
  type ApprovalKind,
  type ApprovalRequest,
  type ApprovalState,
  type ApprovalsCapability,
  type DecideOutcome,
} from './approvals.js';
export {
  errorMessage,
  errorCodeOf,
  errorPluginOf,
  errorsFor,
  attributed,
  pluginError,
  PluginError,
  PluginErrorCodes,
  environmentError,
  forbiddenError,
  type KeelErrorCode,
  type PluginErrorOptions,
} from './errors.js';

/**
 * Declare a plugin. An identity function for the compiler: it reads the manifest's type (write it `as const
 * satisfies PluginManifest`) so `setup`'s `ctx` knows the skill names, their argument types and the config keys.
 * @example export default definePlugin({ manifest, setup(ctx) { ctx.skills.register('hello', ({ name }) => `hello ${name}`); } })
 */
export function definePlugin<const M extends PluginManifest>(def: PluginDefinition<M>): PluginDefinition<M> {
  return def;
}

/** A custom skill file's default export (`~/.keel/skills/<name>.ts`). */
export interface CustomSkillDefinition<S extends TSchema = TSchema> extends SkillFlags {
  name: string;
  description: string;
  category?: string;
  parameters: S;
  run(args: Static<S>, ctx: SkillCallContext): unknown | Promise<unknown>;
}

/**
 * Declare a custom skill: one file in `~/.keel/skills/`, hot-reloaded on save.
 * @example
 * export default defineSkill({ name: 'shout', description: 'Upper-cases text',
 *   parameters: Type.Object({ text: Type.String() }), run: ({ text }) => text.toUpperCase() });
 */
export function defineSkill<S extends TSchema>(def: CustomSkillDefinition<S>): CustomSkillDefinition<S> {
  return def;
}

/**
 * Build a skill manifest entry with a category default; the name and schema keep their literal types, so the
 * typed contract still knows the skill.
 * @example skills: [skill({ name: 'hello', description: 'Greets', parameters: Type.Object({ name: Type.String() }) })]
 */
export function skill<const S extends Omit<SkillManifest, 'category'> & { category?: string }>(
  def: S,
): Omit<S, 'category'> & { category: string } {
  return { category: 'general', ...def };
}

export { isPidAlive } from './pid.js';
export { ADMIN_ONLY_SKILLS, isPrivilegedSkill } from './admin-skills.js';
