/**
 * The public contract between the Keel kernel and every plugin.
 *
 * Plugins import only from `sdk/` (this file, `sdk/index.ts`), never from `kernel/`.
 * Everything here is data or an interface: the kernel implements it. The leaf of the contract: it imports nothing
 * of Keel, so every other sdk/ file may build on it (what needs the capability map, such as `SkillCallContext`,
 * lives in sdk/plugin.ts; docs/plugins.md, "The SDK's layers").
 */
import type { TSchema } from 'typebox';

/** JSON value. */
export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Channels named by the spec, plus the operator origins. */
export type ChannelName =
  | 'cli'
  | 'gateway'
  | 'ws'
  | 'chatA'
  | 'chatB'
  | 'chatC'
  | 'chatD'
  | 'email'
  | 'gateway-chat'
  | 'scheduler'
  | 'autonomy'
  | (string & {});

// ---------------------------------------------------------------- actions

/** Status of an action. `pending` waits in the queue, `executing` is being carried out. */
export type ActionStatus = 'pending' | 'executing' | 'completed' | 'failed';

/** A queued task (SPEC "Action"). */
export interface Action {
  /** `act_<epoch_ms>_<suffix>` */
  id: string;
  task: string;
  /** 1..10, higher runs first. */
  priority: number;
  status: ActionStatus;
  /** ISO 8601 UTC. */
  createdAt: string;
  /** `cli`, `gateway`, `ws`, or a channel name. */
  source: ChannelName;
  metadata: ActionMetadata;
  /** Final answer, set when completed. */
  result?: string;
  /** Reason, set when failed (or on the last failed attempt). */
  error?: string;
  /** ISO 8601 UTC, set when the action reached completed or failed. */
  settledAt?: string;
}

export interface ActionMetadata {
  retries: number;
  maxRetries: number;
  /** Milliseconds from createdAt after which a pending or failed action is removed. */
  ttl: number;
  /** Epoch ms before which a retried action is not picked (backoff). */
  notBefore?: number;
  /** Who asked for it: decides admin rights and session scope when it runs. */
  actor?: Actor;
  /** Channel-specific reply address (chat id, JID, message id ...). */
  replyTo?: Record<string, Json>;
  /** Anything else a producer wants to carry along. */
  [key: string]: Json | Actor | undefined;
}

/** What a producer gives to push an action. */
export interface PushInput {
  task: string;
  /** Any number; clamped to 1..10. Default 5. A non-number is an error. */
  priority?: unknown;
  source?: ChannelName;
  actor?: Actor;
  maxRetries?: number;
  ttl?: number;
  metadata?: Record<string, Json>;
}

// ---------------------------------------------------------------- actors

/**
 * Who is asking. `operator` is the local operator (CLI, authenticated gateway): admin.
 * `user` is someone on a channel: admin only if `adminUsers[channel]` names them (or an identity link does).
 * `agent` is the agent acting on its own (autonomy): never admin by itself.
 */
export interface Actor {
  kind: 'operator' | 'user' | 'agent';
  channel: ChannelName;
  /** Channel-specific user id (chatA numeric id, chatB JID, chatC snowflake, chatD member id, email address). */
  userId?: string;
  /** True when the request came over a loopback connection (gateway). */
  loopback?: boolean;
  /** True when content from an untrusted source (web page, email, non-admin chat) started this work. */
  untrusted?: boolean;
  /** For kind 'agent': the actor of the action the agent is working on. */
  onBehalfOf?: Actor;
}

// ---------------------------------------------------------------- config

export type PolicyClass = 'SAFE' | 'APPROVAL' | 'LOCKED';

/** One configuration key, declared by the manifest that owns it. */
export interface ConfigKeySpec {
  /** TypeBox / JSON schema of the value. */
  schema: TSchema;
  /** Default value (absent: no default). */
  default?: unknown;
  /** Environment variable names, first found wins (`PROVIDERD_REGION`, `AWS_REGION`). */
  env?: readonly string[];
  policy: PolicyClass;
  /** Masked in every output (`GET /api/config`, `keel config get`, logs). */
  secret?: boolean;
  description: string;
}

/** Where a configuration change comes from: the agent's own change is subject to the policy classes. */
export interface ConfigOrigin {
  kind: 'operator' | 'agent' | 'admin';
  actor?: Actor;
  reason?: string;
}

/** Result of a configuration change request. */
export type ConfigChangeOutcome =
  | { status: 'applied'; key: string; value: unknown }
  | { status: 'pending'; key: string; id: string; message: string };

export interface PendingConfigChange {
  id: string;
  key: string;
  /** Masked when the key is secret. */
  value: unknown;
  reason?: string;
  requestedBy?: Actor;
  requestedAt: string;
}

/** Read access to configuration, with every layer merged. */
export interface ConfigView {
  get<T = unknown>(key: string): T;
  has(key: string): boolean;
  /** All known keys with effective values; secrets masked when `masked`. */
  all(opts?: { masked?: boolean }): Record<string, unknown>;
}

// ---------------------------------------------------------------- skills

export interface SkillFlags {
  isDeep?: boolean;
  isResearch?: boolean;
  isParallelSafe?: boolean;
  isDangerous?: boolean;
  adminOnly?: boolean;
  /** Sends something out of Keel (a message, a file, network access): on untrusted work it may only answer the requester. */
  isOutbound?: boolean;
}

/** A skill as the manifest declares it (data only). */
export interface SkillManifest extends SkillFlags {
  name: string;
  description: string;
  /** `web`, `system`, `memory`, ... */
  category: string;
  /** TypeBox object schema of the arguments. */
  parameters: TSchema;
}

/** The result of one skill call, as the gateway returns it. */
export interface SkillResult {
  success: boolean;
  /** Text result (objects are JSON-serialised). */
  result: string;
  /** Milliseconds, with microsecond precision. */
  executionTime: number;
  /** Error code when `success` is false. */
  code?: string;
  /** When the skill's handler failed: the id of the plugin whose error it was (the skill's, or a channel's it sent through). */
  plugin?: string;
}

// ---------------------------------------------------------------- manifests

export type PluginKind = 'skill' | 'channel' | 'provider' | 'service';

export interface CliOptionSpec {
  /** commander flag syntax, e.g. `-p, --port <port>` */
  flags: string;
  description: string;
  default?: string | boolean | number;
}

export interface CliCommandSpec {
  /** Command name with its arguments in commander syntax, e.g. `gateway` or `send <to> [text]`. */
  name: string;
  description: string;
  options?: readonly CliOptionSpec[];
}

export interface PluginPermissions {
  network?: boolean;
  /** Paths it may read or write; `$KEEL_HOME` is expanded. */
  filesystem?: readonly string[];
  commands?: boolean;
  /** Config keys flagged secret that it reads. */
  secrets?: readonly string[];
}

/**
 * Plugin manifest: data, validated with ajv before any plugin code runs. Write it `as const satisfies
 * PluginManifest` so `definePlugin` knows the skill names, argument types and config keys it declares.
 * @example
 * const manifest = { id: 'hello', version: '1.0.0', kind: 'skill', description: 'Says hello',
 *   skills: [{ name: 'hello', description: 'Greets', category: 'demo', parameters: Type.Object({ name: Type.String() }) }],
 * } as const satisfies PluginManifest;
 */
export interface PluginManifest {
  id: string;
  version: string;
  kind: PluginKind;
  description: string;
  config?: Record<string, ConfigKeySpec>;
  skills?: readonly SkillManifest[];
  requires?: readonly string[];
  provides?: readonly string[];
  permissions?: PluginPermissions;
  cli?: readonly CliCommandSpec[];
  /** Channel plugins: the channel's name and the form of its user ids (validates `adminUsers.<name>`). */
  channel?: { name: string; userIdPattern: string; userIdExample: string };
}

// ---------------------------------------------------------------- logging

export interface Logger {
  debug(message: string, ...rest: unknown[]): void;
  info(message: string, ...rest: unknown[]): void;
  warn(message: string, ...rest: unknown[]): void;
  error(message: string, ...rest: unknown[]): void;
}

/** A log line as the kernel keeps it (SPEC "Log entry", plus the tag). */
export interface LogEntry {
  level: 'info' | 'warn' | 'error';
  message: string;
  timestamp: string;
  tag?: string;
}

// ---------------------------------------------------------------- health

export interface HealthReport {
  ok: boolean;
  message?: string;
}
