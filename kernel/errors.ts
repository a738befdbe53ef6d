/**
 * Coded errors. Every error the kernel raises has a stable `code` (`KEEL_E_*`) and a message a user can act on.
 */
export const ErrorCodes = {
  INVALID_INPUT: 'KEEL_E_INVALID_INPUT',
  TASK_EMPTY: 'KEEL_E_TASK_EMPTY',
  PRIORITY_INVALID: 'KEEL_E_PRIORITY_INVALID',
  QUEUE_CORRUPT: 'KEEL_E_QUEUE_CORRUPT',
  QUEUE_LOCKED: 'KEEL_E_QUEUE_LOCKED',
  /** A file shared by Keel's processes (the pending configuration changes) stayed locked too long. */
  FILE_LOCKED: 'KEEL_E_FILE_LOCKED',
  QUEUE_CLOSED: 'KEEL_E_QUEUE_CLOSED',
  QUEUE_NOT_OWNER: 'KEEL_E_QUEUE_NOT_OWNER',
  /** The shared queue's Redis cannot be reached (queueRedisUrl). */
  QUEUE_UNREACHABLE: 'KEEL_E_QUEUE_UNREACHABLE',
  ACTION_NOT_EXECUTING: 'KEEL_E_ACTION_NOT_EXECUTING',
  ACTION_NOT_FOUND: 'KEEL_E_ACTION_NOT_FOUND',
  CONFIG_UNKNOWN_KEY: 'KEEL_E_CONFIG_UNKNOWN_KEY',
  CONFIG_INVALID_VALUE: 'KEEL_E_CONFIG_INVALID_VALUE',
  CONFIG_LOCKED: 'KEEL_E_CONFIG_LOCKED',
  CONFIG_FILE_INVALID: 'KEEL_E_CONFIG_FILE_INVALID',
  CONFIG_DUPLICATE_KEY: 'KEEL_E_CONFIG_DUPLICATE_KEY',
  APPROVAL_NOT_FOUND: 'KEEL_E_APPROVAL_NOT_FOUND',
  APPROVAL_FORBIDDEN: 'KEEL_E_APPROVAL_FORBIDDEN',
  FORBIDDEN: 'KEEL_E_FORBIDDEN',
  SAFE_MODE: 'KEEL_E_SAFE_MODE',
  SKILL_UNKNOWN: 'KEEL_E_SKILL_UNKNOWN',
  SKILL_INVALID_ARGS: 'KEEL_E_SKILL_INVALID_ARGS',
  SKILL_NO_HANDLER: 'KEEL_E_SKILL_NO_HANDLER',
  SKILL_FAILED: 'KEEL_E_SKILL_FAILED',
  SKILL_VETOED: 'KEEL_E_SKILL_VETOED',
  MANIFEST_INVALID: 'KEEL_E_MANIFEST_INVALID',
  PLUGIN_DUPLICATE: 'KEEL_E_PLUGIN_DUPLICATE',
  SKILL_DUPLICATE: 'KEEL_E_SKILL_DUPLICATE',
  PLUGIN_CYCLE: 'KEEL_E_PLUGIN_CYCLE',
  PLUGIN_MISSING_REQUIREMENT: 'KEEL_E_PLUGIN_MISSING_REQUIREMENT',
  PLUGIN_SETUP_FAILED: 'KEEL_E_PLUGIN_SETUP_FAILED',
  PLUGIN_TIMEOUT: 'KEEL_E_PLUGIN_TIMEOUT',
  /** A plugin cannot start because of its surroundings (port in use, missing device), not a fault of its own. */
  PLUGIN_ENVIRONMENT: 'KEEL_E_PLUGIN_ENVIRONMENT',
  PLUGIN_NOT_PROVIDED: 'KEEL_E_PLUGIN_NOT_PROVIDED',
  PLUGIN_LOAD_FAILED: 'KEEL_E_PLUGIN_LOAD_FAILED',
  HOOK_UNKNOWN: 'KEEL_E_HOOK_UNKNOWN',
  COMPILE_FAILED: 'KEEL_E_COMPILE_FAILED',
  ALREADY_RUNNING: 'KEEL_E_ALREADY_RUNNING',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

export class KeelError extends Error {
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;
  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'KeelError';
    this.code = code;
    if (details) this.details = details;
  }
}

export function isKeelError(e: unknown, code?: ErrorCode): e is KeelError {
  return e instanceof KeelError && (code === undefined || e.code === code);
}

export { errorMessage } from '../sdk/errors.js';

/**
 * The KEEL_E_* code of an error: a KeelError's, or a plain error's `code` when it names a known code (plugins
 * cannot import KeelError; the SDK's environmentError and forbiddenError set `code`).
 */
export function errorCode(e: unknown): ErrorCode | undefined {
  if (e instanceof KeelError) return e.code;
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (Object.values(ErrorCodes) as string[]).includes(code) ? (code as ErrorCode) : undefined;
}
