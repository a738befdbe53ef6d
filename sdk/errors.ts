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
 * The codes a plugin raises when no code of its own fits better: a small set of families a client can act on
 * (documented in docs/plugins.md "Error codes"). A plugin may add its own (`KEEL_E_WEB_BLOCKED`); the kernel's
 * codes (`KEEL_E_COMPILE_FAILED`, `KEEL_E_FILE_LOCKED`, ...) are reused where they say what happened.
 * @example throw coded(PluginErrorCodes.CHANNEL_NOT_CONNECTED, 'WhatsApp is not connected.');
 */
export const PluginErrorCodes = {
  /** A value the plugin was given (a skill argument, an id, a file, a URL) cannot be used; the message says why. */
  INVALID_ARGUMENT: 'KEEL_E_INVALID_ARGUMENT',
  /** A setting, key, model or companion plugin the call needs is not configured or not loaded. */
  NOT_CONFIGURED: 'KEEL_E_NOT_CONFIGURED',
  /** A named thing (document, memory, pending item, plugin, sub-agent, config key) does not exist. */
  NOT_FOUND: 'KEEL_E_NOT_FOUND',
  /** The channel is not running, not configured or not connected to its platform now. */
  CHANNEL_NOT_CONNECTED: 'KEEL_E_CHANNEL_NOT_CONNECTED',
  /** The channel could not send (no address to answer, the platform refused or failed the message). */
  CHANNEL_SEND_FAILED: 'KEEL_E_CHANNEL_SEND_FAILED',
  /** An upstream service the plugin calls (a model or image provider, an MCP server, a browser, IMAP) failed or answered unusably. */
  PROVIDER_FAILED: 'KEEL_E_PROVIDER_FAILED',
  /** The plugin cannot do it now: it is stopping, its store is closed or damaged; retry later or fix what the message names. */
  UNAVAILABLE: 'KEEL_E_UNAVAILABLE',
  /** The call or the action it belongs to was cancelled. */
  CANCELLED: 'KEEL_E_CANCELLED',
  /** A fault inside the plugin (a broken invariant, a library that changed), and the host's code for an uncoded error. */
  PLUGIN_FAILED: 'KEEL_E_PLUGIN_FAILED',
} as const satisfies Record<string, KeelErrorCode>;

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
  /** The id of the plugin whose error it is, when known (set by {@link errorsFor} and by the host). */
  declare readonly plugin?: string;
  constructor(code: C, message: string, options?: PluginErrorOptions) {
    // A malformed code is a bug in the plugin: say so where it is written, not later at the client.
    if (typeof code !== 'string' || !CODE.test(code)) {
      throw new TypeError(`Plugin error code ${JSON.stringify(code)} is not of the form KEEL_E_UPPER_CASE_WORDS.`);
    }
    super(message, options);
    this.name = 'PluginError';
    this.code = code;
    if (options?.plugin) Object.defineProperty(this, 'plugin', { value: options.plugin, enumerable: true, configurable: true });
  }

  /** What a client sees when the error is serialised: the code, the plugin and the message (never the stack). */
  toJSON(): { code: C; plugin?: string; message: string } {
    return { code: this.code, ...(this.plugin ? { plugin: this.plugin } : {}), message: this.message };
  }
}

export interface PluginErrorOptions {
  cause?: unknown;
  /** The id of the plugin whose error it is. */
  plugin?: string;
}

/**
 * Build a coded plugin error (see {@link PluginError}).
 * @example
 * throw pluginError('KEEL_E_WEB_BAD_URL', `Not a valid URL: ${JSON.stringify(raw)}.`);
 */
export function pluginError<C extends KeelErrorCode>(code: C, message: string, options?: PluginErrorOptions): PluginError<C> {
  return new PluginError(code, message, options);
}

/**
 * A plugin's error builder: every error it makes carries the plugin's id, so the client sees whose error it is.
 * @example
 * const coded = errorsFor('chatA');
 * throw coded('KEEL_E_INVALID_ARGUMENT', 'A poll needs 2 to 10 options.');
 */
export function errorsFor(plugin: string) {
  return <C extends KeelErrorCode>(code: C, message: string, options?: { cause?: unknown }): PluginError<C> =>
    new PluginError(code, message, { ...options, plugin });
}

/**
 * The id of the plugin an error names (a {@link PluginError}'s `plugin`), or undefined.
 * @example errorPluginOf(errorsFor('chatA')('KEEL_E_NOT_FOUND', 'x')) // 'chatA'
 */
export function errorPluginOf(e: unknown): string | undefined {
  const plugin = (e as { plugin?: unknown } | null | undefined)?.plugin;
  return typeof plugin === 'string' && plugin ? plugin : undefined;
}

/**
 * What the host makes of an error that came out of a plugin: a {@link PluginError} stays the same error (the plugin
 * added when it names none); anything else becomes a {@link PluginError} with the same message, the error's own code or `fallback`,
 * the plugin it names or `plugin`, and the original as `cause`.
 * @example throw attributed(e, 'chatA', 'KEEL_E_CHANNEL_SEND_FAILED');
 */
export function attributed(e: unknown, plugin: string, fallback: KeelErrorCode = PluginErrorCodes.PLUGIN_FAILED): PluginError {
  const owner = errorPluginOf(e);
  if (e instanceof PluginError) {
    // Kept as it is (a subclass stays one); only the plugin is added when it names none.
    if (!owner) Object.defineProperty(e, 'plugin', { value: plugin, enumerable: true, configurable: true });
    return e;
  }
  return new PluginError(errorCodeOf(e) ?? fallback, errorMessage(e), { cause: e, plugin: owner ?? plugin });
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
