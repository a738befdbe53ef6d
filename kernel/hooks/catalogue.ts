/**
 * The kernel's one hook catalogue, created once per kernel and frozen: plugins tap, never add hooks.
 *
 * Every plugin tap is contained the way a skill is: a tap that throws (or rejects) is reported to the host
 * (logged with the plugin id and hook name, counted towards the plugin's health and quarantine) and never
 * changes the outcome of what fired the hook. What a failed tap counts as depends on the hook's kind:
 * - series, parallel and sync hooks: as if the tap had not run;
 * - waterfalls (`messageIn`, `messageOut`): the value passes on unchanged;
 * - bail hooks: "no opinion", except security vetoes (`beforeSkill`), where a tap that cannot decide refuses
 *   the call (fails closed) with a message naming the plugin.
 */
import { AsyncParallelHook, AsyncSeriesBailHook, AsyncSeriesHook, AsyncSeriesWaterfallHook, SyncHook } from 'tapable';
import type { HookArgs, HookCatalogue, HookName, SkillCall, SkillVeto } from '../../sdk/hooks.js';
import { ErrorCodes, KeelError, errorMessage } from '../errors.js';

export function createHooks(): Readonly<HookCatalogue> {
  const hooks: HookCatalogue = {
    actionQueued: new AsyncParallelHook(['action'], 'actionQueued'),
    actionAmended: new AsyncParallelHook(['action'], 'actionAmended'),
    actionStarted: new AsyncSeriesHook(['action'], 'actionStarted'),
    actionSettled: new AsyncParallelHook(['action', 'outcome'], 'actionSettled'),
    thinking: new SyncHook(['event'], 'thinking'),
    beforeSkill: new AsyncSeriesBailHook<[SkillCall], SkillVeto | undefined>(['call'], 'beforeSkill'),
    afterSkill: new AsyncSeriesHook(['call', 'result'], 'afterSkill'),
    observation: new SyncHook(['event'], 'observation'),
    messageIn: new AsyncSeriesWaterfallHook(['message'], 'messageIn'),
    messageOut: new AsyncSeriesWaterfallHook(['message'], 'messageOut'),
    modelCall: new SyncHook(['event'], 'modelCall'),
    messageDelivered: new SyncHook(['event'], 'messageDelivered'),
    messageIgnored: new SyncHook(['event'], 'messageIgnored'),
    configChanged: new SyncHook(['event'], 'configChanged'),
    pluginLoaded: new SyncHook(['event'], 'pluginLoaded'),
    pluginUnloaded: new SyncHook(['event'], 'pluginUnloaded'),
    pluginQuarantined: new SyncHook(['event'], 'pluginQuarantined'),
  };
  return Object.freeze(hooks);
}

const SYNC_HOOKS = new Set<HookName>([
  'thinking',
  'observation',
  'modelCall',
  'messageDelivered',
  'messageIgnored',
  'configChanged',
  'pluginLoaded',
  'pluginUnloaded',
  'pluginQuarantined',
]);
const WATERFALL_HOOKS = new Set<HookName>(['messageIn', 'messageOut']);
/** Bail hooks whose answer is a security decision: a tap that fails refuses instead of abstaining. */
export const VETO_HOOKS = new Set<HookName>(['beforeSkill']);

/** Told about every tap that threw or rejected; must not throw itself. */
export type TapErrorHandler = (owner: string, hook: HookName, error: unknown) => void;

export interface TapOptions {
  stage?: number;
  /** Where a failing tap is reported (the plugin host); without it the failure is only swallowed. */
  onError?: TapErrorHandler;
}

/** The veto a failing `beforeSkill` tap stands for: the call is refused, naming the plugin and its error. */
export function failedVeto(owner: string, hook: HookName, error: unknown): SkillVeto {
  return {
    reason: `The ${hook} check of plugin "${owner}" failed (${errorMessage(error)}), so the call is refused: a safety check that cannot decide never lets a call through.`,
    code: ErrorCodes.SKILL_VETOED,
  };
}

/**
 * Tap a hook on behalf of a plugin, contained (see the module comment). Sync hooks take the function as is;
 * async hooks use tapPromise so a plugin may return a promise or a plain value.
 */
export function tapHook<K extends HookName>(
  hooks: Readonly<HookCatalogue>,
  owner: string,
  name: K,
  fn: (...args: HookArgs<K>) => unknown,
  opts: TapOptions = {},
): void {
  const hook = hooks[name] as unknown as {
    tap(o: object, f: Function): void;
    tapPromise?(o: object, f: Function): void;
  };
  if (!hook) throw new KeelError(ErrorCodes.HOOK_UNKNOWN, `Unknown hook "${String(name)}". Known hooks: ${Object.keys(hooks).join(', ')}`);
  const tapOpts = opts.stage === undefined ? { name: owner } : { name: owner, stage: opts.stage };
  const report = (e: unknown) => {
    try {
      opts.onError?.(owner, name, e);
    } catch {
      // The reporter is the last line; nothing it does may reach the hook's caller.
    }
  };
  // What the hook sees when the tap failed: nothing, the unchanged value (waterfall), or a refusal (veto).
  const fallback = (args: unknown[], e: unknown): unknown => {
    if (WATERFALL_HOOKS.has(name)) return args[0];
    if (VETO_HOOKS.has(name)) return failedVeto(owner, name, e);
    return undefined;
  };
  if (SYNC_HOOKS.has(name) || !hook.tapPromise) {
    hook.tap(tapOpts, (...args: unknown[]) => {
      try {
        const r = fn(...(args as HookArgs<K>)) as { then?: unknown } | undefined;
        // Sync hooks do not wait for a promise, but its rejection is still this plugin's failure.
        if (r && typeof r.then === 'function') (r as Promise<unknown>).then(undefined, report);
        return undefined;
      } catch (e) {
        report(e);
        return undefined;
      }
    });
  } else {
    hook.tapPromise(tapOpts, async (...args: unknown[]) => {
      try {
        return await fn(...(args as HookArgs<K>));
      } catch (e) {
        report(e);
        return fallback(args, e);
      }
    });
  }
}

/**
 * Remove every tap a plugin made. tapable has no public untap, so the taps array is filtered and the
 * compiled call function reset (the same fields tapable itself rebuilds on tap()).
 */
export function untapAll(hooks: Readonly<HookCatalogue>, owner: string): void {
  for (const hook of Object.values(hooks) as Array<{ taps: Array<{ name: string }>; _resetCompilation?: () => void }>) {
    const before = hook.taps.length;
    hook.taps = hook.taps.filter((t) => t.name !== owner);
    if (hook.taps.length !== before) hook._resetCompilation?.();
  }
}

/** Names of the plugins that still have a tap on some hook (boundary tests: nothing is left after unload). */
export function tapOwners(hooks: Readonly<HookCatalogue>): Map<string, HookName[]> {
  const out = new Map<string, HookName[]>();
  for (const [name, hook] of Object.entries(hooks) as Array<[HookName, { taps: Array<{ name: string }> }]>) {
    for (const t of hook.taps) out.set(t.name, [...(out.get(t.name) ?? []), name]);
  }
  return out;
}
