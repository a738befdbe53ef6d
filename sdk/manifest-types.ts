/**
 * Types read off a manifest written `as const satisfies PluginManifest`: its skill names and their argument types
 * (from the TypeBox schemas), its config keys and their value types. A manifest typed only as `PluginManifest`
 * (its names unknown to the compiler) gets the loose types: any name, arguments `any`, values `unknown`.
 */
import type { Static, TSchema } from 'typebox';
import type { ConfigKeySpec, PluginManifest, SkillManifest } from './types.js';

/** Whether `S` is the wide `string` rather than a union of literal names. */
type IsWide<S> = string extends S ? true : false;

/**
 * The skills a manifest declares, as a union of their entries.
 * @example type S = SkillOf<typeof manifest>; // { name: 'http_fetch'; ... } | { name: 'extract_article'; ... }
 */
export type SkillOf<M extends PluginManifest> = M extends { skills?: infer L }
  ? NonNullable<L> extends readonly (infer S)[]
    ? S & SkillManifest
    : never
  : never;

/**
 * The skill names a manifest declares (`string` for a manifest whose names the compiler does not know).
 * @example type N = SkillName<typeof manifest>; // 'http_fetch' | 'extract_article'
 */
export type SkillName<M extends PluginManifest> = SkillOf<M>['name'];

/**
 * The argument type of skill `N`, from its TypeBox schema (`any` when the manifest's names are not known).
 * @example type A = SkillArgs<typeof manifest, 'http_fetch'>; // { url: string; maxBytes?: number }
 */
export type SkillArgs<M extends PluginManifest, N extends string> =
  IsWide<SkillName<M>> extends true
    ? // biome-ignore lint/suspicious/noExplicitAny: a manifest the compiler cannot read leaves the arguments to the handler
      any
    : Extract<SkillOf<M>, { name: N }>['parameters'] extends infer P extends TSchema
      ? Static<P>
      : never;

type ConfigOf<M extends PluginManifest> = M extends { config?: infer C }
  ? NonNullable<C> extends infer R extends Record<string, ConfigKeySpec>
    ? R
    : {}
  : {};

/**
 * The config keys a manifest declares (`never` when they are not known to the compiler).
 * @example type K = ConfigKey<typeof manifest>; // 'webFetchTimeoutMs' | 'webMaxRedirects' | ...
 */
export type ConfigKey<M extends PluginManifest> = IsWide<keyof ConfigOf<M>> extends true ? never : keyof ConfigOf<M> & string;

/**
 * The value type of config key `K` of manifest `M`: its schema's type, and `undefined` too when it declares no default.
 * @example type T = ConfigValue<typeof manifest, 'webFetchTimeoutMs'>; // number
 */
export type ConfigValue<M extends PluginManifest, K extends string> = ConfigOf<M>[K] extends infer S extends ConfigKeySpec
  ? S extends { default: unknown }
    ? Static<S['schema']>
    : Static<S['schema']> | undefined
  : never;

/**
 * The capability names a manifest lists in `provides` (`string` when they are not known to the compiler).
 * @example type P = ProvidedName<typeof manifest>; // 'web'
 */
export type ProvidedName<M extends PluginManifest> = M extends { provides?: infer L }
  ? NonNullable<L> extends readonly (infer P extends string)[]
    ? P
    : never
  : never;
