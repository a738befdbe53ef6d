/**
 * What a plugin's entry module exports and what its `setup` receives.
 */
import type { CapabilitiesWithPrefix, CapabilityName, CapabilityOf } from './capabilities.js';
import type { KnownConfig } from './config-keys.js';
import type { HookArgs, HookName } from './hooks.js';
import type { ConfigKey, ConfigValue, ProvidedName, SkillArgs, SkillName } from './manifest-types.js';
import type {
  Action,
  Actor,
  ConfigChangeOutcome,
  ConfigOrigin,
  ConfigView,
  HealthReport,
  Json,
  Logger,
  PendingConfigChange,
  PolicyClass,
  PluginKind,
  PluginManifest,
  PushInput,
  SkillManifest,
  SkillResult,
} from './types.js';

/** What a skill handler receives besides its arguments. */
export interface SkillCallContext {
  actor: Actor;
  /** The action being carried out, when there is one. */
  action?: Action;
  signal: AbortSignal;
  log: Logger;
  /**
   * The implementation some plugin provides for a capability, as `ctx.use` in a plugin: how a custom skill file
   * (which has no plugin context) reaches what a plugin offers.
   * A known capability name is typed by the capability map (sdk/capabilities.ts); any other name reads as the type
   * given (custom skill files are not compiled with the project, so they cannot add to the map).
   * @example
   * const web = ctx.use('web'); // WebCapability | undefined
   * if (!web) throw new Error('The web plugin is not running.');
   */
  use<K extends CapabilityName>(capability: K): CapabilityOf<K> | undefined;
  use<T = unknown>(capability: string): T | undefined;
}

export type SkillHandler<A = Record<string, unknown>> = (args: A, ctx: SkillCallContext) => unknown | Promise<unknown>;

/** Hooks a plugin may fire through `ctx.emit`; the others belong to the kernel. */
export type EmittableHook = 'thinking' | 'observation' | 'modelCall' | 'messageDelivered' | 'messageIgnored' | 'messageIn' | 'messageOut';

/** Tap options: `stage` orders taps (lower first), as in tapable. */
export interface TapOptions {
  stage?: number;
}

/**
 * The hooks door of a plugin: every tap is named after the plugin that made it and removed when it stops. A tap
 * that throws never changes what fired the hook (a throwing `beforeSkill` tap refuses the call); it is logged and
 * counted towards this plugin's quarantine.
 * @example
 * ctx.hooks.tap('actionSettled', (action, outcome) => ctx.log.info(`${action.id}: ${outcome.status}`));
 */
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
  /**
   * Queues an action. With `idempotencyKey`, a push retried with the same key (within 24 hours on the shared queue;
   * while the file queue remembers the action) answers with the first push's action instead of queueing a second.
   */
  push(input: PushInput, options?: { idempotencyKey?: string }): Promise<Action>;
  get(id: string): Action | undefined;
  /**
   * Stops an action: a pending one is removed (`removed`, and `actionSettled` fires with status `removed`); an
   * executing one is stopped wherever it runs, in this process, another process or on another machine sharing the
   * queue (`stopping`): its runner's signal is aborted and it settles as a failure with `reason`, never retried and
   * never run again. `settled` and `unknown` change nothing. (`elsewhere` is no longer returned: kept in the type
   * for plugins written against the earlier contract.)
   */
  cancel(id: string, reason: string): Promise<'removed' | 'stopping' | 'elsewhere' | 'settled' | 'unknown'>;
  /**
   * Changes the task (and merges `metadata` into the metadata) of an action that still waits, in place: its id,
   * priority, schedule and place in line are kept, and `actionAmended` fires. Resolves false, changing nothing,
   * when it is unknown, started or settled (an edited chat message whose action is still waiting: the channel kit).
   */
  amend(id: string, change: { task: string; metadata?: Record<string, Json> }): Promise<boolean>;
  list(): { pending: Action[]; completed: Action[]; failed: Action[] };
  counts(): { pending: number; completed: number; failed: number };
  /**
   * A queue shared by several machines (queueRedisUrl): whether any of them queued an action for this inbound
   * message in the last 7 days (recorded with the push, atomically). Absent on the file queue, where the queue's
   * own history is all there is. The channel kit's `receive` asks it, so that a message a channel reads again after
   * its connection moved to another machine (a history catch-up from an older cursor) is not handled twice.
   * @example if (await ctx.queue.knowsInbound?.('chatC', '1234567890123456789')) return; // queued elsewhere already
   */
  knowsInbound?(channel: string, messageId: string): Promise<boolean>;
}

/**
 * Options of `ctx.skills.register`.
 *
 * @example
 * ctx.skills.register('send_x', handler, { available: () => (token() ? true : 'xToken is not set') });
 */
export interface SkillRegisterOptions {
  /** True when the skill can work now, else why not; checked each time the skills are listed. */
  available?: () => true | string;
}

/**
 * Skill operations a plugin may use. With a manifest written `as const satisfies PluginManifest`, `register` takes
 * only the skill names it declares and types the handler's arguments from the skill's TypeBox schema.
 * @example
 * ctx.skills.register('http_fetch', async ({ url, maxBytes }, call) => fetchIt(url, maxBytes, call.signal));
 */
export interface SkillsApi<M extends PluginManifest = PluginManifest> {
  /**
   * Attach the handler for a skill that this plugin's manifest declares. `opts.available` says whether the skill
   * can work right now (true) or why not (a short message that starts with what it needs: "needs xToken"); while
   * it cannot, `list()` leaves it out, so the agent's catalogue does not offer it, but operator surfaces
   * (`GET /api/skills`, the dashboard) still list it with that message. Calling it still runs the handler, which
   * should answer with a full explanation.
   *
   * @example
   * ctx.skills.register('web_search', search, {
   *   available: () => (ctx.config.get('searchAApiKey') ? true : 'needs searchAApiKey or searchBApiKey'),
   * });
   */
  register<N extends SkillName<M>>(name: N, handler: SkillHandler<SkillArgs<M, N>>, opts?: SkillRegisterOptions): void;
  /**
   * Declare a skill at run time and attach its handler: for a plugin whose skills are known only once it has
   * connected somewhere (an MCP server's tools). The name must not be taken by another plugin; the parameters
   * are a JSON Schema from outside, checked against the meta-schema now (a broken one throws, naming the skill).
   * The skill goes through the same dispatch (schema, policy, hooks) as any declared one; it is removed by
   * `withdraw` or when the plugin stops. Declaring a name this plugin already declared at run time replaces it.
   * @example
   * ctx.skills.declare({ name: 'mcp_files_read', description: 'Read a file', category: 'mcp', parameters, adminOnly: true }, run);
   */
  declare(skill: SkillManifest, handler: SkillHandler<Record<string, unknown>>, opts?: SkillRegisterOptions): void;
  /** Remove a skill this plugin declared with `declare` (a manifest's own skills stay). */
  withdraw(name: string): void;
  /** The one path to a skill: schema check, policy, hooks, timing. */
  execute(name: string, args: unknown, actor: Actor, opts?: { action?: Action; signal?: AbortSignal }): Promise<SkillResult>;
  /**
   * Manifests of every available skill (`includeUnavailable`: also those whose `available` says no, each with
   * `unavailable`: that message, e.g. "needs searchAApiKey or searchBApiKey").
   */
  list(opts?: { includeUnavailable?: boolean }): Array<SkillManifest & { plugin: string; unavailable?: string }>;
}

/**
 * Configuration a plugin may read and change (changes go through the policy classes). A key the plugin's own
 * manifest declares reads as its schema's type (never undefined when it declares a default); a kernel key such
 * as `safeMode` reads as `KnownConfig` says (sdk/config-keys.ts); any other key (another plugin's) reads as the
 * type given, `unknown` by default.
 * @example
 * const timeoutMs = ctx.config.get('webFetchTimeoutMs'); // number: the manifest's default when unset
 * const safe = ctx.config.get('safeMode');                // boolean: a kernel key (sdk/config-keys.ts)
 * const other = ctx.config.get<string>('someOtherKey');   // any other key: the type given, unknown by default
 */
export interface ConfigApi<M extends PluginManifest = PluginManifest> extends ConfigView {
  get<K extends ConfigKey<M>>(key: K): ConfigValue<M, K>;
  get<K extends keyof KnownConfig>(key: K): KnownConfig[K];
  get<T = unknown>(key: string): T;
  set(key: string, value: unknown, origin: ConfigOrigin): Promise<ConfigChangeOutcome>;
  /** Changes the agent asked for on APPROVAL keys, waiting for a human (secret values masked). */
  pending(): PendingConfigChange[];
  /** Apply a pending change. Only a human may: origin `operator`, or `admin` with the admin as `actor`. */
  approve(id: string, origin: ConfigOrigin): Promise<ConfigChangeOutcome>;
  reject(id: string, origin: ConfigOrigin): Promise<PendingConfigChange>;
}

/** Whether the compiler knows this manifest's literal contents (it was written `as const`). */
type KnownManifest<M extends PluginManifest> = string extends M['id'] ? false : true;

/**
 * The capability names `ctx.provide` accepts: those the manifest lists in `provides` (any known one when it is not known).
 * @example type P = ProvidableName<typeof manifest>; // 'web'
 */
export type ProvidableName<M extends PluginManifest> = KnownManifest<M> extends true ? ProvidedName<M> & CapabilityName : CapabilityName;

/**
 * The plugin's only door to the world, typed by the plugin's manifest (`definePlugin` infers it).
 * @example
 * export default definePlugin({ manifest, setup(ctx) { const llm = ctx.use('llm'); ctx.log.info(`${llm ? 'with' : 'without'} a model`); } });
 */
export interface PluginContext<M extends PluginManifest = PluginManifest> {
  /** This plugin's id. */
  id: string;
  /** The data directory (`~/.keel` or `KEEL_HOME`). */
  home: string;
  /** Keel's version. */
  version: string;
  config: ConfigApi<M>;
  /** A logger tagged with the plugin id. */
  log: Logger;
  hooks: PluginHooks;
  skills: SkillsApi<M>;
  queue: QueueApi;
  /**
   * The implementation some plugin provides for a capability (`agent`, `memory`, `channel:chatA`, ...), if any,
   * typed by the capability map (sdk/capabilities.ts; a plugin adds its own by declaration merging).
   * @example const text = await ctx.use('llm')?.complete({ messages });
   */
  use<K extends CapabilityName>(capability: K): CapabilityOf<K> | undefined;
  /**
   * Fire one of the hooks a plugin may raise: `thinking`, `observation` and `modelCall` (the agent),
   * `messageDelivered` and `messageIgnored` (channels), `messageIn` and `messageOut` (channels; waterfalls, so
   * the possibly rewritten message comes back).
   */
  emit<K extends EmittableHook>(hook: K, ...args: HookArgs<K>): K extends 'messageIn' | 'messageOut' ? Promise<HookArgs<K>[0]> : void;
  /**
   * Every running provider of a capability whose name starts with `prefix`, in name order.
   * @example for (const c of ctx.capabilities('channel:')) console.log(c.name, c.impl.status()); // impl: ChannelCapability
   */
  capabilities<P extends string>(prefix: P): Array<{ name: string; plugin: string; impl: CapabilitiesWithPrefix<P> }>;
  /** Offer an implementation of a capability this manifest lists in `provides`. */
  provide<K extends ProvidableName<M>>(capability: K, impl: CapabilityOf<K>): void;
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
  /** Parsed positional arguments and options (commander's camelCase names). */
  args: string[];
  options: Record<string, unknown>;
  /** The `--config <file>` given to keel, if any. */
  configFile?: string;
  /**
   * Run the kernel with all permitted plugins in this process as a long-running Keel process: it gets a pid
   * file `run/<processName>.pid` (so `keel status` sees it and `keel stop` stops it) and stops on SIGINT/SIGTERM.
   * `overrides` are command-line config values (highest precedence). With `runAgent` it also runs the agent
   * (refused while another agent runs on this home). `only` loads just the named plugins and plugins of the named
   * kinds (narrowing the user's pluginAllowList, never widening it; the command's own plugin always loads), e.g. a
   * short-lived command that must not start channels or the scheduler beside a running `keel run`. `logLevel`
   * quietens the kernel's log (default `info`), e.g. under a progress bar.
   * @example
   * const k = await c.startKernel({ processName: 'ingest', only: { ids: ['web', 'agent'], kinds: ['provider'] }, logLevel: 'warn' });
   */
  startKernel(opts: {
    processName: string;
    overrides?: Record<string, unknown>;
    runAgent?: boolean;
    only?: { ids?: string[]; kinds?: PluginKind[] };
    logLevel?: 'info' | 'warn' | 'error';
  }): Promise<RunningKernel>;
  /**
   * What Keel knows without starting the kernel: effective configuration (defaults, file, environment), every
   * key, each plugin's state as it would start, and configuration problems. No plugin code runs.
   */
  inspect(): Promise<InspectView>;
  /**
   * Start this same command again as a detached background process logging to `$KEEL_HOME/<logName>`; resolves once
   * it reports ready, with where its gateway listens when it runs one.
   */
  detach(opts: { processName: string; logName: string; dropArgs: string[] }): Promise<{ pid: number; log: string; gateway?: string }>;
}

/** See `CommandContext.inspect`. Secret values are masked in `config.get`. */
export interface InspectView {
  version: string;
  config: { get(key: string): unknown };
  keys: Array<{ key: string; owner: string; policy: PolicyClass; secret: boolean }>;
  plugins: Array<{ id: string; state: string; reason?: string }>;
  configProblems: string[];
  /**
   * The unmasked value of a secret key this plugin's manifest lists in `permissions.secrets` (undefined for any
   * other key): for commands acting as the local operator, e.g. `keel ui` reading the key of its own gateway.
   * @example const key = (await c.inspect()).secret?.('gatewayApiKey');
   */
  secret?(key: string): string | undefined;
}

/** A kernel started from a command. */
export interface RunningKernel {
  /** Status of a plugin in that kernel (e.g. to tell whether the server it starts is up). */
  pluginStatus(id: string): { state: string; reason?: string } | undefined;
  /**
   * Run a skill in that kernel through dispatch (schema, policy, hooks), as `actor`: how a command reaches what a
   * plugin offers, never a global or an import of the plugin.
   * @example
   * const r = await running.execute('approve_command', { id, decision: 'approve' }, { kind: 'operator', channel: 'cli' });
   * if (!r.success) process.stderr.write(`keel: ${r.result}\n`);
   */
  execute(skill: string, args: Record<string, unknown>, actor: Actor): Promise<SkillResult>;
  /** Every available skill of that kernel (its manifests and those declared at run time), with its plugin. */
  skills(): Array<SkillManifest & { plugin: string }>;
  /** Resolves when the kernel stops (signal, `keel stop`). */
  done: Promise<void>;
  stop(): Promise<void>;
}

export type CommandHandler = (ctx: CommandContext) => Promise<number | void> | number | void;

/**
 * The default export of a plugin's entry module; `M` is its manifest's type (see `definePlugin`).
 * @example const plugin: PluginDefinition<typeof manifest> = { manifest, setup(ctx) { ctx.log.info('up'); } };
 */
export interface PluginDefinition<M extends PluginManifest = PluginManifest> {
  manifest: M;
  setup(ctx: PluginContext<M>): PluginInstance | void | Promise<PluginInstance | void>;
  /** Handlers of the CLI commands the manifest declares, keyed by command name (first word). */
  commands?: Record<string, CommandHandler>;
}

/** The channel names of SPEC, in the order the gateway lists them (running channels: `ctx.capabilities('channel:')`). */
export const CHANNEL_NAMES = ['chatA', 'chatB', 'chatC', 'chatD', 'email', 'gateway-chat'] as const;
