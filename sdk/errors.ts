/**
 * Errors for plugins: one way to read the message of anything thrown, and coded errors whose `KEEL_E_*` code
 * travels through dispatch to the REST and WebSocket client instead of collapsing into a generic failure.
 */

/**
 * A Keel error code: `KEEL_E_` followed by upper-case words.
 * @example const code: KeelErrorCode = 'KEEL_E_WEB_TIMEOUT';
 */
export type KeelErrorCode = `KEEL_E_${string}`;

const CODE = /^KEEL_E_[A-Z0-9]+(?:_[A-Z0-9]+)*$/;

/**
 * The message of anything thrown: an Error's `message`, anything else converted with `String`.
 * @example
 * try { await work(); } catch (e) { ctx.log.warn(`work failed: ${errorMessage(e)}`); }
 */
export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}

/**
 * An error with a stable `KEEL_E_*` code a client can act on. Throw it (or a subclass) from a skill handler;
 * dispatch reports the code instead of `KEEL_E_SKILL_FAILED`.
 * @example
 * class WebFetchError extends PluginError<'KEEL_E_WEB_TIMEOUT' | 'KEEL_E_WEB_REFUSED'> {}
 * throw new WebFetchError('KEEL_E_WEB_TIMEOUT', 'Fetching https://example.com timed out after 15000 ms.');
 */
export class PluginError<C extends KeelErrorCode = KeelErrorCode> extends Error {
  readonly code: C;
  constructor(code: C, message: string, options?: { cause?: unknown }) {
    // A malformed code is a bug in the plugin: say so where it is written, not later at the client.
    if (typeof code !== 'string' || !CODE.test(code)) {
      throw new TypeError(`Plugin error code ${JSON.stringify(code)} is not of the form KEEL_E_UPPER_CASE_WORDS.`);
    }
    super(message, options);
    this.name = 'PluginError';
    this.code = code;
  }
}

/**
 * Build a coded plugin error (see {@link PluginError}).
 * @example
 * throw pluginError('KEEL_E_WEB_BAD_URL', `Not a valid URL: ${JSON.stringify(raw)}.`);
 */
export function pluginError<C extends KeelErrorCode>(code: C, message: string, options?: { cause?: unknown }): PluginError<C> {
  return new PluginError(code, message, options);
}

/**
 * The `KEEL_E_*` code carried by anything thrown, or undefined when it carries none (plain errors, `ENOENT`).
 * @example
 * if (errorCodeOf(e) === 'KEEL_E_WEB_TIMEOUT') retryLater();
 */
export function errorCodeOf(e: unknown): KeelErrorCode | undefined {
  const code = (e as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' && CODE.test(code) ? (code as KeelErrorCode) : undefined;
}

/**
 * Error a plugin throws from `setup` when its surroundings, not its code, stop it (a port in use, a missing
 * device). The host reports it and retries at each health round, but it never counts towards quarantine.
 * @example throw environmentError(`Port ${port} is already in use; choose another port with -p.`)
 */
export function environmentError(message: string): PluginError<'KEEL_E_PLUGIN_ENVIRONMENT'> {
  return pluginError('KEEL_E_PLUGIN_ENVIRONMENT', message);
}

/**
 * Error a skill throws to refuse a call on policy grounds (dispatch reports it as KEEL_E_FORBIDDEN, the gateway as 403).
 * @example throw forbiddenError('Command refused: rm is on commandDenyList.')
 */
export function forbiddenError(message: string): PluginError<'KEEL_E_FORBIDDEN'> {
  return pluginError('KEEL_E_FORBIDDEN', message);
}
