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
  /** No default: absent means the file queue in KEEL_HOME. */
  queueRedisUrl: string | undefined;
  queueRedisPrefix: string;
  /** No default: absent means the shared queue's ops are not signed. */
  queueRedisSigningKey: string | undefined;
  queueWorkerLeaseSeconds: number;
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
  downloadsKeepDays: number;
  logFileMaxMB: number;
  channelHistoryKeepDays: number;
}

/**
 * SPEC "commandAllowList" default, with `<cli>` read as `keel` (the kernel declares it; the doctor reads it offline).
 * @example const allowed = ctx.config.get('commandAllowList') ?? DEFAULT_COMMAND_ALLOW_LIST;
 */
export const DEFAULT_COMMAND_ALLOW_LIST: readonly string[] = Object.freeze([
  'npm',
  'node',
  'npx',
  'git',
  'python',
  'pip',
  'pip3',
  'curl',
  'wget',
  'powershell',
  'pwsh',
  'bash',
  'apt',
  'apt-get',
  'yum',
  'brew',
  'systemctl',
  'service',
  'cat',
  'ls',
  'dir',
  'echo',
  'mkdir',
  'touch',
  'cp',
  'mv',
  'grep',
  'find',
  'which',
  'whoami',
  'uname',
  'hostname',
  'keel',
]);

/**
 * SPEC "commandDenyList" default, plus `unlink` and `shred`, which delete files as `rm` does (docs/security.md).
 * @example if (DEFAULT_COMMAND_DENY_LIST.includes(program)) warn(program);
 */
export const DEFAULT_COMMAND_DENY_LIST: readonly string[] = Object.freeze([
  'rm',
  'rmdir',
  'del',
  'erase',
  'format',
  'mkfs',
  'dd',
  'shutdown',
  'reboot',
  'poweroff',
  'reg',
  'diskpart',
  'netsh',
  'unlink',
  'shred',
]);
