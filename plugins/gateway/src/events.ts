/**
 * The gateway's event bus: the kernel's hooks turned into the WebSocket events of SPEC "Events"
 * (`thinking`, `action`, `observation`) plus the lifecycle events documented in docs/websocket.md.
 *
 * One bus per gateway server: it taps the hooks once through `ctx.hooks.tap` (taps live as long as the plugin;
 * after `dispose()` they do nothing) and subscribes to the kernel's warn/error log entries.
 * Texts are capped at {@link EVENT_TEXT_CAP} characters (`truncated: true` marks a cut), and known secret
 * values are masked, so neither a huge observation nor a secret reaches clients.
 */
import type { Action, ActionOutcome, Json, LogEntry, SkillCall, SkillResult } from '../../../sdk/index.js';
import type { GatewayDeps } from './deps.js';
import { errorMessage } from '../../../sdk/errors.js';

/** Longest text (thought, result, task, parameter value, config value) an event carries. */
export const EVENT_TEXT_CAP = 4000;

/** Tap stage of the `beforeSkill` tap: after every other tap, so a call vetoed by another plugin emits no `action`. */
const LAST_STAGE = 1_000_000;

export interface GatewayEvent {
  event: string;
  data: Record<string, unknown>;
}

export type EventListener = (e: GatewayEvent) => void;

export interface EventBus {
  /** Listen to every event; returns the unsubscribe. */
  subscribe(listener: EventListener): () => void;
  /** Emit an event to every listener (a throwing listener does not stop the others). */
  emit(event: string, data: Record<string, unknown>): void;
  /** Emit an event from another plugin (`gateway:events`): texts capped and known secrets masked like the gateway's own. */
  emitForeign?(event: string, data: Record<string, unknown>): void;
  /** Stop emitting: hook taps become no-ops, the log subscription ends, listeners are dropped. */
  dispose(): void;
}

/** A bus with no kernel behind it (used by {@link createEventBus} and benchmarks). */
export function createBareBus(onError?: (e: unknown) => void): EventBus {
  const listeners = new Set<EventListener>();
  let disposed = false;
  return {
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    emit(event, data) {
      if (disposed) return;
      const e = { event, data };
      for (const l of listeners) {
        try {
          l(e);
        } catch (err) {
          onError?.(err);
        }
      }
    },
    dispose() {
      disposed = true;
      listeners.clear();
    },
  };
}

/** Masks every secret value the gateway may read (its own API key; 6+ characters) in a text: a short prefix, then `****`. */
function secretMasker(deps: GatewayDeps): { mask(s: string): string; refresh(): void } {
  let secrets: string[] = [];
  const refresh = () => {
    const next: string[] = [];
    for (const k of deps.info.configKeys()) {
      if (!k.secret) continue;
      try {
        // Only the secrets this plugin may read (its manifest's permissions.secrets); the kernel refuses others.
        const v = deps.ctx.config.get<unknown>(k.key);
        if (typeof v === 'string' && v.length >= 6) next.push(v);
      } catch {
        /* not readable by the gateway */
      }
    }
    secrets = next;
  };
  refresh();
  return {
    refresh,
    mask(s) {
      let out = s;
      for (const v of secrets) if (out.includes(v)) out = out.split(v).join(`${v.slice(0, 3)}****`);
      return out;
    },
  };
}

export function createEventBus(deps: GatewayDeps): EventBus {
  const bus = createBareBus((e) => deps.ctx.log.warn(`gateway event listener failed: ${errorMessage(e)}`));
  const secrets = secretMasker(deps);
  let live = true;

  /** A capped, secret-masked text; sets `flags.truncated` when cut. */
  const text = (s: unknown, flags: { truncated?: boolean }): string => {
    const str = secrets.mask(typeof s === 'string' ? s : s === undefined || s === null ? '' : String(s));
    if (str.length <= EVENT_TEXT_CAP) return str;
    flags.truncated = true;
    return `${str.slice(0, EVENT_TEXT_CAP)}…`;
  };

  /** Parameters with every string capped and masked; objects deeper than a few levels become text. */
  const params = (v: unknown, flags: { truncated?: boolean }, depth = 0): unknown => {
    if (typeof v === 'string') return text(v, flags);
    if (v === null || typeof v !== 'object') return v;
    if (depth >= 4) {
      let s: string;
      try {
        s = JSON.stringify(v);
      } catch {
        s = String(v);
      }
      return text(s, flags);
    }
    if (Array.isArray(v)) {
      const items = v.length > 100 ? ((flags.truncated = true), v.slice(0, 100)) : v;
      return items.map((x) => params(x, flags, depth + 1));
    }
    const out: Record<string, unknown> = {};
    let n = 0;
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (++n > 100) {
        flags.truncated = true;
        break;
      }
      out[k] = params(x, flags, depth + 1);
    }
    return out;
  };

  const emit = (event: string, build: (flags: { truncated?: boolean }) => Record<string, unknown>) => {
    if (!live) return;
    const flags: { truncated?: boolean } = {};
    const data = build(flags);
    if (flags.truncated) data.truncated = true;
    bus.emit(event, data);
  };
  const idOf = (actionId: string | undefined) => (actionId ? { actionId } : {});

  const tap = deps.ctx.hooks.tap.bind(deps.ctx.hooks);

  tap('thinking', (e) => emit('thinking', (f) => ({ thought: text(e.thought, f), ...idOf(e.actionId) })));

  // beforeSkill runs after argument validation and policy: the skill is about to execute. Never vetoes.
  tap(
    'beforeSkill',
    (call: SkillCall) => {
      emit('action', (f) => ({ skill: call.name, parameters: params(call.args, f), ...idOf(call.actionId) }));
      return undefined;
    },
    { stage: LAST_STAGE },
  );
  tap('afterSkill', (call: SkillCall, result: SkillResult) => {
    emit('observation', (f) => ({
      result: text(result.result, f),
      skill: call.name,
      success: result.success,
      executionTime: result.executionTime,
      ...(result.code ? { code: result.code } : {}),
      ...(result.plugin ? { plugin: result.plugin } : {}),
      ...idOf(call.actionId),
    }));
  });
  // The `observation` hook (what the agent feeds back to its model) repeats afterSkill's result for every tool
  // call, so it is not streamed: one `observation` event per skill execution.

  tap('actionQueued', (a: Action) =>
    emit('action.queued', (f) => ({ actionId: a.id, task: text(a.task, f), priority: a.priority, source: a.source })),
  );
  tap('actionAmended', (a: Action) => emit('action.amended', (f) => ({ actionId: a.id, task: text(a.task, f), priority: a.priority })));
  tap('actionStarted', (a: Action) => emit('action.started', (f) => ({ actionId: a.id, task: text(a.task, f), priority: a.priority })));
  tap('actionSettled', (a: Action, o: ActionOutcome) => {
    switch (o.status) {
      case 'completed':
        return emit('action.completed', (f) => ({ actionId: a.id, result: text(o.detail ?? a.result, f) }));
      case 'retry':
        return emit('action.retry', (f) => ({
          actionId: a.id,
          error: text(o.detail ?? a.error, f),
          retries: a.metadata.retries,
          maxRetries: a.metadata.maxRetries,
          ...(typeof a.metadata.notBefore === 'number' ? { notBefore: new Date(a.metadata.notBefore).toISOString() } : {}),
        }));
      case 'failed':
        return emit('action.failed', (f) => ({ actionId: a.id, error: text(o.detail ?? a.error, f), retries: a.metadata.retries }));
      case 'removed':
        return emit('action.removed', (f) => ({ actionId: a.id, reason: text(o.detail ?? 'removed', f), status: a.status }));
    }
  });

  tap('configChanged', (e) => {
    secrets.refresh();
    emit('config.changed', (f) => ({ key: e.key, value: configValue(e.value, f), origin: e.origin }));
  });
  tap('pluginLoaded', (e) => emit('plugin.loaded', (f) => ({ id: e.id, ...(e.reason ? { reason: text(e.reason, f) } : {}) })));
  tap('pluginUnloaded', (e) => emit('plugin.unloaded', (f) => ({ id: e.id, ...(e.reason ? { reason: text(e.reason, f) } : {}) })));
  tap('pluginQuarantined', (e) => emit('plugin.quarantined', (f) => ({ id: e.id, ...(e.reason ? { reason: text(e.reason, f) } : {}) })));

  const unLog = deps.info.onLog((e: LogEntry) => {
    if (e.level !== 'warn' && e.level !== 'error') return;
    emit('log', (f) => ({ level: e.level, message: text(e.message, f), timestamp: e.timestamp, ...(e.tag ? { tag: e.tag } : {}) }));
  });

  /** A config value as is when small; a large one becomes its capped JSON text. */
  function configValue(v: unknown, f: { truncated?: boolean }): unknown {
    if (typeof v === 'string') return text(v, f);
    let s: string | undefined;
    try {
      s = JSON.stringify(v);
    } catch {
      s = undefined;
    }
    if (s === undefined) return null;
    if (s.length <= EVENT_TEXT_CAP) return v as Json;
    return text(s, f);
  }

  return {
    subscribe: bus.subscribe,
    emit: bus.emit,
    emitForeign(event, data) {
      emit(event, (f) => params(data, f) as Record<string, unknown>);
    },
    dispose() {
      live = false;
      unLog();
      bus.dispose();
    },
  };
}
