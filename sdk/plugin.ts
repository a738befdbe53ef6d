/**
 * What a plugin's entry module exports and what its `setup` receives.
 */
import type { HookArgs, HookName } from './hooks.js';
import type {
  Action,
  Actor,
  ConfigChangeOutcome,
  ConfigOrigin,
  ConfigView,
  HealthReport,
  Logger,
  PluginManifest,
  PushInput,
  SkillHandler,
  SkillManifest,
  SkillResult,
} from './types.js';

/** Tap options: `stage` orders taps (lower first), as in tapable. */
export interface TapOptions {
  stage?: number;
}

/** The hooks door of a plugin: every tap is named after the plugin that made it. */
export interface PluginHooks {
  tap<K extends HookName>(
    hook: K,
    /** Sync hooks ignore a returned promise; async hooks await it. */
    fn: (...args: HookArgs<K>) => unknown,
    opts?: TapOptions,
  ): void;
}

/** Queue operations a plugin may use. */
export interface QueueApi {
  push(input: PushInput): Promise<Action>;
  get(id: string): Action | undefined;
  list(): { pending: Action[]; completed: Action[]; failed: Action[] };
  counts(): { pending: number; completed: number; failed: number };
}

/** Skill operations a plugin may use. */
export interface SkillsApi {
  /** Attach the handler for a skill that this plugin's manifest declares. */
  register(name: string, handler: SkillHandler<any>): void;
  /** The one path to a skill: schema check, policy, hooks, timing. */
  execute(name: string, args: unknown, actor: Actor, opts?: { action?: Action; signal?: AbortSignal }): Promise<SkillResult>;
  /** Manifests of every available skill. */
  list(): Array<SkillManifest & { plugin: string }>;
}

/** Configuration a plugin may read and change (changes go through the policy classes). */
export interface ConfigApi extends ConfigView {
  set(key: string, value: unknown, origin: ConfigOrigin): Promise<ConfigChangeOutcome>;
}

/** The plugin's only door to the world. */
export interface PluginContext {
  /** This plugin's id. */
  id: string;
  /** The data directory (`~/.keel` or `KEEL_HOME`). */
  home: string;
  /** Keel's version. */
  version: string;
  config: ConfigApi;
  /** A logger tagged with the plugin id. */
  log: Logger;
  hooks: PluginHooks;
  skills: SkillsApi;
  queue: QueueApi;
  /** The implementation some plugin provides for a capability (`agent`, `memory`, ...), if any. */
  use<T = unknown>(capability: string): T | undefined;
  /** Offer an implementation of a capability this manifest lists in `provides`. */
  provide<T>(capability: string, impl: T): void;
  /** Aborted when the plugin is being stopped. */
  signal: AbortSignal;
}

/** What `setup` returns. */
export interface PluginInstance {
  stop?(): void | Promise<void>;
  health?(): HealthReport | Promise<HealthReport>;
}

/** Context of a CLI command a plugin contributes. */
export interface CommandContext {
  home: string;
  log: Logger;
  /** Parsed positional arguments and options. */
  args: string[];
  options: Record<string, unknown>;
  /**
   * Start the kernel with all permitted plugins (this one included) in this process.
   * `overrides` are command-line config values (highest precedence).
   */
  startKernel(opts?: { overrides?: Record<string, unknown>; runAgent?: boolean }): Promise<RunningKernel>;
}

/** A kernel started from a command. */
export interface RunningKernel {
  ctx: PluginContext;
  /** Resolves when the kernel stops (signal, `keel stop`). */
  done: Promise<void>;
  stop(): Promise<void>;
}

export type CommandHandler = (ctx: CommandContext) => Promise<number | void> | number | void;

/** The default export of a plugin's entry module. */
export interface PluginDefinition {
  manifest: PluginManifest;
  setup(ctx: PluginContext): PluginInstance | void | Promise<PluginInstance | void>;
  /** Handlers of the CLI commands the manifest declares, keyed by command name (first word). */
  commands?: Record<string, CommandHandler>;
}

/** Capability `agent`: carries out an action. */
export interface AgentCapability {
  /** Whether the agent can take work now, and why not. */
  ready(): { ready: boolean; reason?: string };
  execute(action: Action, opts: { signal: AbortSignal }): Promise<{ result: string }>;
}
