/**
 * What plugins contribute, each entry owned by its plugin: skills and capabilities.
 * Unloading a plugin removes all of it.
 */
import type { SkillHandler } from '../../sdk/plugin.js';
import type { SkillManifest } from '../../sdk/types.js';
import { attributed, PluginErrorCodes } from '../../sdk/errors.js';
import { ErrorCodes, errorMessage, KeelError } from '../errors.js';

export interface SkillEntry {
  manifest: SkillManifest;
  plugin: string;
  handler?: SkillHandler<any>;
  /** Compiled argument validator (ajv); set when the skill is registered. */
  validate?: ArgValidator;
  /** From `register`'s options: the skill is left out of `list()` while this does not return true. */
  available?: () => true | string;
  /** Declared at run time (`ctx.skills.declare`), not in the manifest. */
  dynamic?: boolean;
}

/** Returns undefined when valid, else a message naming the offending field. May fill defaults in place. */
export type ArgValidator = (args: Record<string, unknown>) => string | undefined;

export class Registry {
  readonly skills = new Map<string, SkillEntry>();
  private readonly capabilities = new Map<string, { plugin: string; impl: unknown }>();

  /** Declare a plugin's skills; refuses a name another plugin already owns. All or nothing. */
  addSkills(plugin: string, manifests: readonly SkillManifest[], compile: (schema: SkillManifest['parameters']) => ArgValidator): void {
    const seen = new Set<string>();
    for (const m of manifests) {
      const owner = this.skills.get(m.name);
      if ((owner && owner.plugin !== plugin) || seen.has(m.name)) {
        throw new KeelError(
          ErrorCodes.SKILL_DUPLICATE,
          `Skill "${m.name}" of plugin "${plugin}" is already provided by plugin "${owner?.plugin ?? plugin}". Rename one of them or disable one plugin with pluginDenyList.`,
          { skill: m.name, plugin, owner: owner?.plugin ?? plugin },
        );
      }
      seen.add(m.name);
    }
    const compiled = manifests.map((m) => ({ m, validate: compile(m.parameters) }));
    for (const { m, validate } of compiled) this.skills.set(m.name, { manifest: m, plugin, validate });
  }

  /**
   * A skill a running plugin declares at run time (`ctx.skills.declare`): refused when another plugin owns the
   * name or when the name is one of the plugin's manifest skills; replaces the plugin's own earlier declaration.
   */
  addDynamic(
    plugin: string,
    manifest: SkillManifest,
    validate: ArgValidator,
    handler: SkillHandler<any>,
    available?: () => true | string,
  ): void {
    const owner = this.skills.get(manifest.name);
    if (owner && (owner.plugin !== plugin || !owner.dynamic)) {
      throw new KeelError(
        ErrorCodes.SKILL_DUPLICATE,
        `Skill "${manifest.name}" of plugin "${plugin}" is already provided by ${owner.plugin === plugin ? 'its own manifest' : `plugin "${owner.plugin}"`}. Rename one of them or disable one plugin with pluginDenyList.`,
        { skill: manifest.name, plugin, owner: owner.plugin },
      );
    }
    this.skills.set(manifest.name, { manifest, plugin, validate, handler, dynamic: true, ...(available ? { available } : {}) });
  }

  /** Removes a skill the plugin declared at run time; anything else is left alone. */
  removeDynamic(plugin: string, name: string): void {
    const e = this.skills.get(name);
    if (e && e.plugin === plugin && e.dynamic) this.skills.delete(name);
  }

  setHandler(plugin: string, name: string, handler: SkillHandler<any>, available?: () => true | string): void {
    const entry = this.skills.get(name);
    if (!entry || entry.plugin !== plugin) {
      throw new KeelError(
        ErrorCodes.SKILL_UNKNOWN,
        `Plugin "${plugin}" registered a handler for "${name}", which its manifest does not declare. Add the skill to the manifest's skills list.`,
      );
    }
    entry.handler = handler;
    if (available) entry.available = available;
    else delete entry.available;
  }

  /** Whether a skill is usable now (a throwing `available` counts as unavailable). */
  isAvailable(entry: SkillEntry): boolean {
    return this.unavailable(entry) === undefined;
  }

  /** Why a skill cannot work now (its `available` message), or undefined when it can. */
  unavailable(entry: SkillEntry): string | undefined {
    if (!entry.available) return undefined;
    try {
      const r = entry.available();
      if (r === true) return undefined;
      return typeof r === 'string' && r.trim() ? r : 'not available now';
    } catch (e) {
      return `its availability check failed (${errorMessage(e)})`;
    }
  }

  provide(plugin: string, capability: string, impl: unknown): void {
    const current = this.capabilities.get(capability);
    if (current && current.plugin !== plugin) {
      throw new KeelError(
        ErrorCodes.PLUGIN_DUPLICATE,
        `Capability "${capability}" is already provided by plugin "${current.plugin}"; plugin "${plugin}" cannot provide it too.`,
      );
    }
    this.capabilities.set(capability, { plugin, impl: capability.startsWith('channel:') ? attributedChannel(plugin, impl) : impl });
  }

  use<T>(capability: string): T | undefined {
    return this.capabilities.get(capability)?.impl as T | undefined;
  }

  /** Every provided capability whose name starts with `prefix`, in name order. */
  withPrefix<T>(prefix: string): Array<{ name: string; plugin: string; impl: T }> {
    const out: Array<{ name: string; plugin: string; impl: T }> = [];
    for (const [name, e] of this.capabilities) if (name.startsWith(prefix)) out.push({ name, plugin: e.plugin, impl: e.impl as T });
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  providerOf(capability: string): string | undefined {
    return this.capabilities.get(capability)?.plugin;
  }

  removePlugin(plugin: string): void {
    for (const [name, e] of this.skills) if (e.plugin === plugin) this.skills.delete(name);
    for (const [cap, e] of this.capabilities) if (e.plugin === plugin) this.capabilities.delete(cap);
  }
}

/** The methods of a `channel:<name>` capability that talk to the platform. */
const CHANNEL_CALLS = new Set<PropertyKey>(['send', 'reply', 'progress', 'react']);

/**
 * A channel capability whose platform calls fail with a coded error naming the channel's plugin: an error without a
 * `KEEL_E_*` code becomes KEEL_E_CHANNEL_SEND_FAILED, and one naming no plugin names the channel's. So a send that
 * fails in a library (`fetch failed`, a socket error) reaches the skill's caller with a code and the plugin.
 */
function attributedChannel(plugin: string, impl: unknown): unknown {
  if (!impl || typeof impl !== 'object') return impl;
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(impl, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (!CHANNEL_CALLS.has(prop) || typeof value !== 'function') return value;
      const known = wrapped.get(prop) as { original: unknown; fn: unknown } | undefined;
      if (known && known.original === value) return known.fn;
      const fn = async (...args: unknown[]) => {
        try {
          return await (value as (...a: unknown[]) => unknown).apply(target, args);
        } catch (e) {
          throw attributed(e, plugin, PluginErrorCodes.CHANNEL_SEND_FAILED);
        }
      };
      wrapped.set(prop, { original: value, fn });
      return fn;
    },
  });
}
