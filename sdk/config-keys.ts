/**
 * Configuration keys a plugin reads but does not own, typed: the kernel's keys (safe mode, admin lists, ...).
 * `ctx.config.get` gives a plugin's own keys the type its manifest declares; keys listed here get the type given
 * here; any other key reads as `unknown` (or the type argument).
 */

/**
 * The kernel's configuration keys and their value types (kernel/config/kernel-keys.ts declares them; a type test
 * keeps the two the same). A plugin may add keys another plugin owns by declaration merging.
 * @example
 * if (ctx.config.get('safeMode')) return 'run_command is off in safe mode.';
 * // A plugin that reads another plugin's key, typed:
 * declare module '../../sdk/config-keys.js' { interface KnownConfig { webFetchTimeoutMs: number } }
 */
export interface KnownConfig {
  queueCompletedLimit: number;
  queueFailedLimit: number;
  safeMode: boolean;
  sudoMode: boolean;
  overrideMode: boolean;
  commandAllowList: string[];
  commandDenyList: string[];
  /** No default: absent means nobody is admin on any chat channel. */
  adminUsers: Record<string, string[]> | undefined;
  enableSelfModification: boolean;
  sessionScope: 'main' | 'per-peer' | 'per-channel-peer';
  identityLinks: Record<string, string>;
  pluginAllowList: string[];
  pluginDenyList: string[];
  pluginHealthCheckIntervalMinutes: number;
}
