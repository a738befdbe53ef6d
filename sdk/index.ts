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
import type { PluginDefinition } from './plugin.js';
import type { SkillCallContext, SkillFlags, SkillManifest } from './types.js';

export { Type };
export type { Static, TSchema };
export type * from './types.js';
export type * from './hooks.js';
export type * from './plugin.js';
export { CHANNEL_NAMES } from './plugin.js';
export type * from './providers.js';
export { ProviderError } from './providers.js';
export { withRetry, parseRetryAfter, type RetryOptions, type RetryDecision } from './retry.js';
export { namespaceSupport, type NamespaceKind, type NamespaceSupport } from './namespaces.js';

/**
 * Declare a plugin. Identity function that gives type checking.
 * @example export default definePlugin({ manifest, setup(ctx) { ... } })
 */
export function definePlugin<D extends PluginDefinition>(def: D): D {
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

/** Build a skill manifest entry with a category default. */
export function skill(def: Omit<SkillManifest, 'category'> & { category?: string }): SkillManifest {
  return { category: 'general', ...def };
}

/**
 * Error a plugin throws from `setup` when its surroundings, not its code, stop it (a port in use, a missing
 * device). The host reports it and retries at each health round, but it never counts towards quarantine.
 * @example throw environmentError(`Port ${port} is already in use; choose another port with -p.`)
 */
export function environmentError(message: string): Error & { code: 'KEEL_E_PLUGIN_ENVIRONMENT' } {
  return Object.assign(new Error(message), { code: 'KEEL_E_PLUGIN_ENVIRONMENT' as const });
}

/**
 * Error a skill throws to refuse a call on policy grounds (dispatch reports it as KEEL_E_FORBIDDEN, the gateway as 403).
 * @example throw forbiddenError('Command refused: rm is on commandDenyList.')
 */
export function forbiddenError(message: string): Error & { code: 'KEEL_E_FORBIDDEN' } {
  return Object.assign(new Error(message), { code: 'KEEL_E_FORBIDDEN' as const });
}
export { isPidAlive } from './pid.js';
