/**
 * Configuration: declared keys, the merged layers, policy-checked changes, secret masking.
 */
export { ConfigStore, CONFIG_FILE_NAME, PENDING_FILE_NAME } from './config-store.js';
export type { AppliedChange, ConfigChangeListener, ConfigStoreChange, ConfigStoreOptions, KeyDescription } from './config-store.js';
export { KeyRegistry } from './key-registry.js';
export type { RegisteredKey, ValueCheck } from './key-registry.js';
export type { ConfigProblem, Layer } from './layers.js';
export {
  ADMIN_CHANNELS,
  DEFAULT_COMMAND_ALLOW_LIST,
  DEFAULT_COMMAND_DENY_LIST,
  KERNEL_KEYS,
  KERNEL_OWNER,
} from './kernel-keys.js';
export { looksSecret, mask, maskByName } from './redact.js';
export { describeSchema } from './schema-text.js';
export { decideChange, approverProblem } from './change-policy.js';
export type { ChangeDecision } from './change-policy.js';
