/**
 * Builds a plugin's `ctx`: its only door to the kernel. After the plugin is stopped (or its setup timed out)
 * the door is shut: every method throws, so a late callback cannot register anything.
 */
import type { ChannelManifestInfo } from '../../sdk/channel.js';
import type { HookCatalogue } from '../../sdk/hooks.js';
import type { ConfigApi, EmittableHook, PluginContext, QueueApi } from '../../sdk/plugin.js';
import type { ConfigKeySpec, Logger, PluginManifest, SkillManifest } from '../../sdk/types.js';
import { ErrorCodes, KeelError, errorMessage } from '../errors.js';
import { tapHook, type TapErrorHandler } from '../hooks/catalogue.js';
import type { Dispatcher } from '../registry/dispatch.js';
import type { ArgValidator, Registry } from '../registry/registry.js';
import { compileArgs } from '../registry/validator.js';

const SKILL_NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;

/** What is wrong with a skill declared at run time (the manifest schema's rules for a skill), or undefined. */
function skillProblem(s: SkillManifest): string | undefined {
  if (!s || typeof s !== 'object') return 'it is not an object';
  if (typeof s.name !== 'string' || !SKILL_NAME.test(s.name)) return `name ${JSON.stringify(s.name)} must match ${SKILL_NAME.source}`;
  if (typeof s.description !== 'string' || !s.description) return `"${s.name}" needs a description`;
  if (typeof s.category !== 'string' || !s.category) return `"${s.name}" needs a category`;
  const p = s.parameters as { type?: unknown } | undefined;
  if (!p || typeof p !== 'object' || p.type !== 'object') return `"${s.name}": parameters must be an object schema`;
  return undefined;
}

/** What the host needs from the configuration store. */
export interface HostConfig extends ConfigApi {
  /** `channel`: the manifest's channel field, whose user-id form validates `adminUsers.<name>`. */
  registerKeys(owner: string, specs: Record<string, ConfigKeySpec>, channel?: ChannelManifestInfo): void;
  unregisterKeys(owner: string): void;
  /** Owner plugin id of a key and whether it is secret. */
  describeKey(key: string): { owner: string; secret: boolean } | undefined;
}

export interface ContextDeps {
  home: string;
  version: string;
  manifest: PluginManifest;
  config: HostConfig;
  registry: Registry;
  hooks: Readonly<HookCatalogue>;
  dispatch: Dispatcher;
  queue: QueueApi;
  logger: (tag: string) => Logger;
  abort: AbortController;
  /** Where a tap of this plugin that throws is reported (the host counts it towards health and quarantine). */
  onTapError?: TapErrorHandler;
}

export function createPluginContext(d: ContextDeps): { ctx: PluginContext; revoke(): void } {
  const id = d.manifest.id;
  let revoked = false;
  const guard = () => {
    if (revoked) throw new KeelError(ErrorCodes.FORBIDDEN, `Plugin ${id} is stopped; its context can no longer be used.`);
  };
  const allowedSecrets = new Set(d.manifest.permissions?.secrets ?? []);
  const readable = (key: string) => {
    const k = d.config.describeKey(key);
    if (k?.secret && k.owner !== id && !allowedSecrets.has(key)) {
      throw new KeelError(
        ErrorCodes.FORBIDDEN,
        `Plugin ${id} may not read the secret "${key}" of plugin ${k.owner}; declare it in permissions.secrets.`,
      );
    }
  };
  const config: ConfigApi = {
    get: <T>(key: string) => {
      readable(key);
      return d.config.get<T>(key);
    },
    has: (key) => d.config.has(key),
    // Plugins only ever see masked secrets in bulk listings.
    all: () => d.config.all({ masked: true }),
    set: (key, value, origin) => {
      guard();
      return d.config.set(key, value, origin);
    },
    pending: () => d.config.pending(),
    approve: (id, origin) => {
      guard();
      return d.config.approve(id, origin);
    },
    reject: (id, origin) => {
      guard();
      return d.config.reject(id, origin);
    },
  };
  const provides = new Set(d.manifest.provides ?? []);
  const ctx: PluginContext = {
    id,
    home: d.home,
    version: d.version,
    config,
    log: d.logger(id),
    hooks: {
      tap: (name, fn, opts) => {
        guard();
        tapHook(d.hooks, id, name, fn, {
          ...(opts?.stage !== undefined ? { stage: opts.stage } : {}),
          ...(d.onTapError ? { onError: d.onTapError } : {}),
        });
      },
    },
    skills: {
      register: (name, handler, opts) => {
        guard();
        d.registry.setHandler(id, name, handler, opts?.available);
      },
      declare: (skill, handler, opts) => {
        guard();
        const problem = skillProblem(skill);
        if (problem) throw new KeelError(ErrorCodes.MANIFEST_INVALID, `Plugin ${id} declared a skill that is not valid: ${problem}.`);
        let validate: ArgValidator;
        try {
          validate = compileArgs(skill.parameters);
        } catch (e) {
          throw new KeelError(
            ErrorCodes.MANIFEST_INVALID,
            `Plugin ${id} declared skill "${skill.name}" with a parameters schema that is not valid JSON Schema: ${errorMessage(e)}.`,
          );
        }
        d.registry.addDynamic(id, skill, validate, handler, opts?.available);
      },
      withdraw: (name) => {
        guard();
        d.registry.removeDynamic(id, name);
      },
      execute: (name, args, actor, opts) => d.dispatch(name, args, actor, opts),
      list: (opts) => {
        const out: Array<SkillManifest & { plugin: string; unavailable?: string }> = [];
        for (const e of d.registry.skills.values()) {
          const why = d.registry.unavailable(e);
          if (why === undefined) out.push({ ...e.manifest, plugin: e.plugin });
          else if (opts?.includeUnavailable) out.push({ ...e.manifest, plugin: e.plugin, unavailable: why });
        }
        return out;
      },
    },
    queue: d.queue,
    use: (cap) => d.registry.use(cap),
    capabilities: (prefix) => d.registry.withPrefix(prefix),
    emit: ((name: EmittableHook, ...args: unknown[]) => {
      guard();
      if (name === 'messageIn' || name === 'messageOut') {
        return (d.hooks[name] as { promise(...a: unknown[]): Promise<unknown> }).promise(...args);
      }
      if (
        name === 'thinking' ||
        name === 'observation' ||
        name === 'modelCall' ||
        name === 'messageDelivered' ||
        name === 'messageIgnored'
      ) {
        (d.hooks[name] as { call(...a: unknown[]): void }).call(...args);
        return undefined;
      }
      throw new KeelError(
        ErrorCodes.HOOK_UNKNOWN,
        `Plugins may emit thinking, observation, modelCall, messageDelivered, messageIgnored, messageIn and messageOut; "${String(name)}" belongs to the kernel.`,
      );
    }) as PluginContext['emit'],
    provide: (cap, impl) => {
      guard();
      if (!provides.has(cap)) {
        throw new KeelError(
          ErrorCodes.PLUGIN_NOT_PROVIDED,
          `Plugin ${id} provides "${cap}" but its manifest's provides list does not name it.`,
        );
      }
      d.registry.provide(id, cap, impl);
    },
    signal: d.abort.signal,
  };
  return {
    ctx,
    revoke: () => {
      revoked = true;
    },
  };
}
