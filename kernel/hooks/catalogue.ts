/**
 * The kernel's one hook catalogue, created once per kernel and frozen: plugins tap, never add hooks.
 */
import {
  AsyncParallelHook,
  AsyncSeriesBailHook,
  AsyncSeriesHook,
  AsyncSeriesWaterfallHook,
  SyncHook,
} from 'tapable';
import type { HookArgs, HookCatalogue, HookName, SkillVeto } from '../../sdk/hooks.js';
import { ErrorCodes, KeelError } from '../errors.js';

export function createHooks(): Readonly<HookCatalogue> {
  const hooks: HookCatalogue = {
    actionQueued: new AsyncParallelHook(['action'], 'actionQueued'),
    actionStarted: new AsyncSeriesHook(['action'], 'actionStarted'),
    actionSettled: new AsyncParallelHook(['action', 'outcome'], 'actionSettled'),
    thinking: new SyncHook(['event'], 'thinking'),
    beforeSkill: new AsyncSeriesBailHook<[import('../../sdk/hooks.js').SkillCall], SkillVeto | undefined>(
      ['call'],
      'beforeSkill',
    ),
    afterSkill: new AsyncSeriesHook(['call', 'result'], 'afterSkill'),
    observation: new SyncHook(['event'], 'observation'),
    messageIn: new AsyncSeriesWaterfallHook(['message'], 'messageIn'),
    messageOut: new AsyncSeriesWaterfallHook(['message'], 'messageOut'),
    configChanged: new SyncHook(['event'], 'configChanged'),
    pluginLoaded: new SyncHook(['event'], 'pluginLoaded'),
    pluginUnloaded: new SyncHook(['event'], 'pluginUnloaded'),
    pluginQuarantined: new SyncHook(['event'], 'pluginQuarantined'),
  };
  return Object.freeze(hooks);
}

const SYNC_HOOKS = new Set<HookName>(['thinking', 'observation', 'configChanged', 'pluginLoaded', 'pluginUnloaded', 'pluginQuarantined']);

/**
 * Tap a hook on behalf of a plugin. Sync hooks take the function as is; async hooks use tapPromise so a
 * plugin may return a promise or a plain value.
 */
export function tapHook<K extends HookName>(
  hooks: Readonly<HookCatalogue>,
  owner: string,
  name: K,
  fn: (...args: HookArgs<K>) => unknown,
  stage?: number,
): void {
  const hook = hooks[name] as unknown as {
    tap(o: object, f: Function): void;
    tapPromise?(o: object, f: Function): void;
  };
  if (!hook) throw new KeelError(ErrorCodes.HOOK_UNKNOWN, `Unknown hook "${String(name)}". Known hooks: ${Object.keys(hooks).join(', ')}`);
  const opts = stage === undefined ? { name: owner } : { name: owner, stage };
  if (SYNC_HOOKS.has(name) || !hook.tapPromise) {
    hook.tap(opts, fn);
  } else {
    hook.tapPromise(opts, async (...args: unknown[]) => fn(...(args as HookArgs<K>)));
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
