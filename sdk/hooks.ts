/**
 * The hook catalogue: every hook the kernel offers, declared once, typed, frozen.
 * How each runs (tapable kind) is part of the contract:
 * - Sync: called in order, return ignored.
 * - AsyncSeries: awaited in order.
 * - AsyncParallel: run together, awaited.
 * - AsyncSeriesBail: in order; the first non-undefined return ends the run and is the result.
 * - AsyncSeriesWaterfall: in order; each tap gets the previous tap's return value.
 * A tap that throws or rejects is contained: the host logs it with the plugin id and hook, counts it towards the
 * plugin's quarantine, and the hook goes on as if the tap had done nothing (a waterfall passes the value on). The one
 * exception is the `beforeSkill` veto, which fails closed: a veto tap that throws refuses the call. See
 * docs/plugins.md.
 */
import type { AsyncParallelHook, AsyncSeriesBailHook, AsyncSeriesHook, AsyncSeriesWaterfallHook, SyncHook } from 'tapable';
import type { InboundMessage } from './channel-types.js';
import type { Action, Actor, Json, SkillResult } from './types.js';

export interface ActionOutcome {
  status: 'completed' | 'failed' | 'retry' | 'removed';
  /** Final answer (completed) or reason (failed, retry, removed). */
  detail?: string;
}

export interface ThinkingEvent {
  actionId?: string;
  thought: string;
}

export interface SkillCall {
  name: string;
  args: Record<string, unknown>;
  actor: Actor;
  actionId?: string;
}

/** Returned by a `beforeSkill` tap to refuse a call. */
export interface SkillVeto {
  reason: string;
  code?: string;
}

export interface ObservationEvent {
  actionId?: string;
  skill?: string;
  result: string;
}

/**
 * What a `messageOut` tap sees (and may rewrite) before a channel sends.
 * @example ctx.hooks.tap('messageOut', (m) => ({ ...m, text: m.text.replace(/secret/g, '***') }));
 */
export interface MessageOutEvent {
  channel: string;
  to: string;
  text: string;
  metadata?: Record<string, Json>;
}

/**
 * One call to a model provider, fired by the agent's model router after the call answered or failed.
 * @example ctx.hooks.tap('modelCall', (c) => ctx.log.info(`${c.provider}/${c.model}: ${c.inputTokens}+${c.outputTokens} tokens`));
 */
export interface ModelCallEvent {
  actionId?: string;
  provider: string;
  model: string;
  /** What the call was for: `main`, `fast`, ... */
  purpose: string;
  ok: boolean;
  inputTokens: number;
  outputTokens: number;
  durationMs: number;
  /** Why it failed (never a secret). */
  error?: string;
}

/**
 * A message a channel delivered to its platform (after `messageOut`), with the platform's ids.
 * @example ctx.emit('messageDelivered', { channel: 'chatA', actionId: a.id, to: '42', messageId: '7', messageIds: ['7'] });
 */
export interface MessageDeliveredEvent {
  channel: string;
  actionId?: string;
  to?: string;
  messageId: string;
  messageIds: string[];
}

/**
 * An inbound platform message that did not become an action, and why (fired by `receive`, or by a channel
 * whose durable ingress recognised a redelivery).
 * @example ctx.hooks.tap('messageIgnored', (m) => ctx.log.info(`${m.channel} ${m.messageId} ignored: ${m.reason}`));
 */
export interface MessageIgnoredEvent {
  channel: string;
  messageId: string;
  chatId?: string;
  userId?: string;
  /** `receive`'s reasons, and for an edit of the message `edit-too-old` or `edit-unchanged` (sdk/channel.ts `IgnoredReason`). */
  reason: 'auto-reply-off' | 'not-admin' | 'duplicate' | 'dropped-by-hook' | 'rate-limited' | 'empty' | 'edit-too-old' | 'edit-unchanged';
}

export interface ConfigChangeEvent {
  key: string;
  /** Masked when the key is secret. */
  value: unknown;
  origin: 'operator' | 'agent' | 'admin' | 'file';
}

export interface PluginEvent {
  id: string;
  reason?: string;
}

/** Every hook the kernel offers. Tap through `ctx.hooks.tap(name, fn)`. */
export interface HookCatalogue {
  /** An action entered the queue (after it is durable). */
  actionQueued: AsyncParallelHook<[Action]>;
  /** A waiting action's task was changed in place (`queue.amend`: an edited chat message). */
  actionAmended: AsyncParallelHook<[Action]>;
  /** The runner handed an action to the agent. */
  actionStarted: AsyncSeriesHook<[Action]>;
  /** An action completed, failed, went back for a retry, or was removed (TTL). */
  actionSettled: AsyncParallelHook<[Action, ActionOutcome]>;
  /** The agent reasons (streamed as the `thinking` event). */
  thinking: SyncHook<[ThinkingEvent]>;
  /** Before a skill runs, after its arguments are valid and policy allowed it. Return a SkillVeto to refuse. */
  beforeSkill: AsyncSeriesBailHook<[SkillCall], SkillVeto | undefined>;
  /** After a skill ran (streamed as the `action` event before, `observation` after). */
  afterSkill: AsyncSeriesHook<[SkillCall, SkillResult]>;
  /** A skill result the agent observes. */
  observation: SyncHook<[ObservationEvent]>;
  /** A message arrived on a channel (fired by `receive`); taps may rewrite its content, or set `dropped: true`. */
  messageIn: AsyncSeriesWaterfallHook<[InboundMessage]>;
  /** A message is about to leave on a channel; taps may rewrite it. */
  messageOut: AsyncSeriesWaterfallHook<[MessageOutEvent]>;
  /** The agent's model router finished one provider call (tokens, time, outcome). */
  modelCall: SyncHook<[ModelCallEvent]>;
  /** A channel delivered a message to its platform (the platform message ids). */
  messageDelivered: SyncHook<[MessageDeliveredEvent]>;
  /** An inbound message did not become an action (the reason). */
  messageIgnored: SyncHook<[MessageIgnoredEvent]>;
  /** A configuration value changed. */
  configChanged: SyncHook<[ConfigChangeEvent]>;
  pluginLoaded: SyncHook<[PluginEvent]>;
  pluginUnloaded: SyncHook<[PluginEvent]>;
  /** A plugin failed setup or health checks repeatedly and was quarantined; a repair action was queued. */
  pluginQuarantined: SyncHook<[PluginEvent]>;
}

export type HookName = keyof HookCatalogue;

/** The argument tuple of each hook. */
export type HookArgs<K extends HookName> = HookCatalogue[K] extends { promise(...args: infer A): unknown } ? A : never;
