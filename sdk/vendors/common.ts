/**
 * Helpers every vendor adapter shares: turning whatever a vendor SDK throws into a {@link ProviderError}
 * (status, Retry-After, retryable) with a message that never holds a key, and the one retry policy
 * (timeout per attempt + the caller's AbortSignal, 429/5xx/connection resets retried with backoff that
 * honours Retry-After). Vendor SDKs are configured with their own retries off, so this is the only one.
 *
 * This module imports no vendor SDK: plugins may load it at start-up for free.
 */
import { scrubSecretShapes } from '../secret-shapes.js';
import Type from 'typebox';
import type { ConfigView } from '../types.js';
import type { ConfigKeySpec } from '../types.js';
import { ProviderError, type TranscriptionRequest } from '../providers.js';
import { linkSignals, parseRetryAfter, withRetry } from '../retry.js';

/** Default time one attempt may take before it is abandoned (120 s). */
export const DEFAULT_TIMEOUT_MS = 120_000;
/** Default retries after the first attempt. */
export const DEFAULT_RETRIES = 3;
/** Longest vendor message kept in an error. */
const MAX_MESSAGE = 400;

const knownSecrets = new Set<string>();

/**
 * Remember a secret (an API key) so that {@link redact} and {@link toProviderError} blank it out wherever it
 * appears. Values shorter than 6 characters are ignored (they would blank ordinary words).
 */
export function registerSecret(value: string | undefined): void {
  if (value && value.length >= 6) knownSecrets.add(value);
}

/** `text` with every registered secret and anything key-shaped (sdk/secret-shapes.ts) replaced by `[redacted]`. */
export function redact(text: string, extraSecrets: Array<string | undefined> = []): string {
  let out = text;
  for (const s of [...knownSecrets, ...extraSecrets]) {
    if (s && s.length >= 6) out = out.split(s).join('[redacted]');
  }
  return scrubSecretShapes(out);
}

function truncate(s: string, n = MAX_MESSAGE): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n)}…` : one;
}

/** Reads a header from a fetch `Headers`, a plain object, or nothing. */
function header(headers: unknown, name: string): string | undefined {
  if (!headers || typeof headers !== 'object') return undefined;
  const h = headers as { get?: (n: string) => string | null };
  if (typeof h.get === 'function') return h.get(name) ?? undefined;
  for (const [k, v] of Object.entries(headers as Record<string, unknown>)) {
    if (k.toLowerCase() === name) return Array.isArray(v) ? String(v[0]) : v == null ? undefined : String(v);
  }
  return undefined;
}

/** Milliseconds to wait from `retry-after-ms` or `Retry-After` headers. */
export function retryAfterFromHeaders(headers: unknown): number | undefined {
  const ms = Number(header(headers, 'retry-after-ms'));
  if (header(headers, 'retry-after-ms') !== undefined && Number.isFinite(ms) && ms >= 0) return ms;
  return parseRetryAfter(header(headers, 'retry-after'));
}

/** Whether an HTTP status is worth another attempt (408, 409 lock conflicts, 425, 429, every 5xx). */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 425 || status === 429 || status >= 500;
}

const RESET_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);

/** The first network error code found along the `cause` chain. */
function networkCode(e: unknown): string | undefined {
  let cur: unknown = e;
  for (let i = 0; i < 6 && cur && typeof cur === 'object'; i++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string' && RESET_CODES.has(code)) return code;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The vendor's own words from an error body (`{error:{message}}`, `{message}`, or a JSON string of those). */
function vendorMessage(e: { message?: unknown; error?: unknown }): string {
  const fromBody = (b: unknown): string | undefined => {
    if (!b || typeof b !== 'object') return undefined;
    const o = b as { error?: unknown; message?: unknown };
    if (o.error && typeof o.error === 'object' && typeof (o.error as { message?: unknown }).message === 'string') {
      return (o.error as { message: string }).message;
    }
    if (typeof o.error === 'string') return o.error;
    return typeof o.message === 'string' ? o.message : undefined;
  };
  const body = fromBody(e.error);
  if (body) return body;
  const msg = typeof e.message === 'string' ? e.message : '';
  const start = msg.indexOf('{');
  if (start >= 0) {
    try {
      const parsed = fromBody(JSON.parse(msg.slice(start)));
      if (parsed) return parsed;
    } catch {
      /* not JSON */
    }
  }
  return msg;
}

function isAbort(e: unknown): boolean {
  if (!e || typeof e !== 'object') return false;
  const name = (e as { name?: unknown }).name;
  return name === 'AbortError' || name === 'APIUserAbortError' || name === 'TimeoutError';
}

/**
 * Whatever a vendor SDK (or fetch) threw, as a ProviderError: HTTP status, Retry-After, whether another attempt
 * may help, and a short message naming the provider that holds no key. `secrets` are blanked out besides the
 * registered ones.
 * @example throw toProviderError('providerA', e)
 */
export function toProviderError(provider: string, e: unknown, secrets: Array<string | undefined> = []): ProviderError {
  if (e instanceof ProviderError) {
    if (e.info.provider === provider) return e;
    return new ProviderError(redact(e.message, secrets), { ...e.info, provider });
  }
  const obj = (e && typeof e === 'object' ? e : { message: String(e) }) as {
    status?: unknown;
    headers?: unknown;
    message?: unknown;
    error?: unknown;
    name?: unknown;
  };
  const status = typeof obj.status === 'number' && obj.status >= 100 ? obj.status : undefined;
  if (status !== undefined) {
    const retryAfterMs = retryAfterFromHeaders(obj.headers);
    const words = truncate(redact(vendorMessage(obj), secrets)).replace(new RegExp(`^${status}\\s+`), '');
    const hint =
      status === 401 || status === 403
        ? ' (check the API key)'
        : status === 429
          ? ' (rate limited)'
          : status === 404
            ? ' (unknown model or wrong base URL?)'
            : '';
    return new ProviderError(`${provider}: HTTP ${status}${hint}: ${words || 'no details'}`, {
      provider,
      status,
      retryable: isRetryableStatus(status),
      ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    });
  }
  if (isAbort(e)) {
    return new ProviderError(`${provider}: the call was cancelled`, { provider, retryable: false });
  }
  const name = typeof obj.name === 'string' ? obj.name : '';
  if (name === 'APIConnectionTimeoutError') {
    return new ProviderError(`${provider}: the request timed out`, { provider, retryable: false });
  }
  const code = networkCode(e);
  if (code || name === 'APIConnectionError') {
    return new ProviderError(`${provider}: connection failed${code ? ` (${code})` : ''}`, { provider, retryable: true });
  }
  const msg = truncate(redact(typeof obj.message === 'string' ? obj.message : String(e), secrets));
  return new ProviderError(`${provider}: ${msg || 'unknown error'}`, { provider, retryable: false });
}

export interface CallOptions {
  /** The caller's signal: aborting it stops the attempt and any wait between attempts. */
  signal?: AbortSignal;
  /** Time one attempt may take (default {@link DEFAULT_TIMEOUT_MS}). A timed-out attempt is not retried. */
  timeoutMs?: number;
  /** Retries after the first attempt (default {@link DEFAULT_RETRIES}). */
  retries?: number;
  /** First backoff in ms when the vendor sends no Retry-After (default 500, doubled, capped at 8 s). */
  baseMs?: number;
  /** Keys to blank out of messages besides the registered ones. */
  secrets?: Array<string | undefined>;
  onRetry?(error: ProviderError, attempt: number, waitMs: number): void;
}

/**
 * Runs `fn` with a signal that combines the caller's signal and a per-attempt timeout; retries 429, 5xx and
 * connection failures with backoff honouring Retry-After; always rejects with a ProviderError.
 * @example await callWithRetry('providerA', (signal) => client.chat.completions.create(body, { signal }), { signal, timeoutMs })
 */
export async function callWithRetry<T>(provider: string, fn: (signal: AbortSignal) => Promise<T>, o: CallOptions = {}): Promise<T> {
  const timeoutMs = o.timeoutMs && o.timeoutMs > 0 ? o.timeoutMs : DEFAULT_TIMEOUT_MS;
  const cancelled = () => new ProviderError(`${provider}: the call was cancelled`, { provider, retryable: false });
  try {
    return await withRetry(
      async () => {
        if (o.signal?.aborted) throw cancelled();
        const timeout = AbortSignal.timeout(timeoutMs);
        const link = linkSignals([o.signal, timeout]);
        try {
          return await fn(link.signal);
        } catch (e) {
          if (o.signal?.aborted) throw cancelled();
          if (timeout.aborted) {
            throw new ProviderError(`${provider}: no answer within ${Math.round(timeoutMs / 100) / 10} s (timeout)`, {
              provider,
              retryable: false,
            });
          }
          throw toProviderError(provider, e, o.secrets);
        } finally {
          link.dispose();
        }
      },
      {
        retries: o.retries ?? DEFAULT_RETRIES,
        baseMs: o.baseMs ?? 500,
        ...(o.signal ? { signal: o.signal } : {}),
        classify: (e) =>
          e instanceof ProviderError
            ? { retry: e.info.retryable, ...(e.info.retryAfterMs !== undefined ? { afterMs: e.info.retryAfterMs } : {}) }
            : { retry: false },
        onRetry: (e, attempt, wait) => o.onRetry?.(e as ProviderError, attempt, wait),
      },
    );
  } catch (e) {
    if (e instanceof ProviderError) throw e;
    if (o.signal?.aborted) throw cancelled();
    throw toProviderError(provider, e, o.secrets);
  }
}

/** Parse tool-call arguments: an object, or `{}` with the raw text kept when the model sent invalid JSON. */
export function parseToolArguments(raw: unknown): { arguments: Record<string, unknown>; raw?: string } {
  if (raw && typeof raw === 'object' && !Array.isArray(raw)) return { arguments: raw as Record<string, unknown> };
  if (typeof raw !== 'string' || raw.trim() === '') return { arguments: {} };
  try {
    const v: unknown = JSON.parse(raw);
    if (v && typeof v === 'object' && !Array.isArray(v)) return { arguments: v as Record<string, unknown> };
    return { arguments: {}, raw };
  } catch {
    return { arguments: {}, raw };
  }
}

/** A ProviderError for a bad request the caller made (never retried), e.g. an unknown voice. */
export function badRequest(provider: string, message: string): ProviderError {
  return new ProviderError(`${provider}: ${message}`, { provider, status: 400, retryable: false });
}

/**
 * The `configured()` answer for a provider that needs one key: names the key and its environment variable.
 * @example missingKey('providerAApiKey', 'PROVIDERA_API_KEY')
 */
export function missingKey(key: string, env: string): { ok: false; missing: string } {
  return { ok: false, missing: `${key} is not set: set it in the configuration file or the environment variable ${env}.` };
}

// ---------------------------------------------------------------- manifests and settings

/** `providerA` -> `PROVIDERA`. */
export function envPrefix(id: string): string {
  return id.toUpperCase();
}

/**
 * The configuration keys every keyed provider owns: `<id>ApiKey` (secret, APPROVAL), `<id>BaseUrl` (LOCKED: a
 * changed base URL would send the key to another host) and `<id>TimeoutSeconds` (SAFE).
 * @example config: { ...providerKeys({ id: 'providerA', vendor: 'OpenAI', baseUrl: 'https://api.openai.com/v1' }) }
 */
export function providerKeys(o: { id: string; vendor: string; baseUrl: string; keyNote?: string }): Record<string, ConfigKeySpec> {
  const env = envPrefix(o.id);
  return {
    [`${o.id}ApiKey`]: {
      schema: Type.String({ minLength: 1 }),
      env: [`${env}_API_KEY`],
      policy: 'APPROVAL',
      secret: true,
      description: `API key of ${o.vendor}. Sent only as a request header to ${o.id}BaseUrl, never in a URL, log or error.${o.keyNote ? ` ${o.keyNote}` : ''}`,
    },
    [`${o.id}BaseUrl`]: {
      schema: Type.String({ minLength: 1, pattern: '^https?://' }),
      default: o.baseUrl,
      env: [`${env}_BASE_URL`],
      policy: 'LOCKED',
      description: `Base URL of the ${o.vendor} API (default ${o.baseUrl}); for gateways, proxies and tests. LOCKED because a changed base URL would send the API key to another host.`,
    },
    [`${o.id}TimeoutSeconds`]: {
      schema: Type.Number({ exclusiveMinimum: 0, maximum: 3600 }),
      default: DEFAULT_TIMEOUT_MS / 1000,
      env: [`${env}_TIMEOUT_SECONDS`],
      policy: 'SAFE',
      description: `Seconds one ${o.vendor} request may take before it is abandoned (default ${DEFAULT_TIMEOUT_MS / 1000}); a request's own timeout wins.`,
    },
  };
}

/** The settings of a keyed provider as its plugin reads them at each call (so changes apply without a restart). */
export interface ProviderSettings {
  apiKey: string | undefined;
  baseUrl: string;
  timeoutMs: number;
}

/** Reads `<id>ApiKey`, `<id>BaseUrl`, `<id>TimeoutSeconds` from a plugin's config view. */
export function readProviderSettings(config: ConfigView, id: string, defaultBaseUrl: string): ProviderSettings {
  const get = <T>(k: string): T | undefined => (config.has(k) ? config.get<T>(k) : undefined);
  const apiKey = get<string>(`${id}ApiKey`);
  const secs = get<number>(`${id}TimeoutSeconds`);
  registerSecret(apiKey);
  return {
    apiKey: apiKey || undefined,
    baseUrl: get<string>(`${id}BaseUrl`) || defaultBaseUrl,
    timeoutMs: typeof secs === 'number' && secs > 0 ? secs * 1000 : DEFAULT_TIMEOUT_MS,
  };
}

/**
 * The audio of a transcription request: its bytes, a file name the vendor can tell the format from, its type.
 * Refuses (status 400, before any request) a request without audio, an unreadable file, or an empty one.
 * @example const audio = await readAudio('providerA', { path: '/tmp/9_51_voice.oga', mimeType: 'audio/ogg' }); // name 9_51_voice.ogg
 */
export async function readAudio(id: string, req: TranscriptionRequest): Promise<{ bytes: Uint8Array; name: string; type?: string }> {
  if (req.data === undefined && !req.path) throw badRequest(id, 'transcribe needs the audio: a path or data.');
  let bytes: Uint8Array;
  if (req.data !== undefined) bytes = req.data;
  else {
    const { readFile } = await import('node:fs/promises');
    try {
      bytes = await readFile(req.path!);
    } catch (e) {
      throw badRequest(id, `cannot read the audio file ${req.path}: ${(e as NodeJS.ErrnoException).code ?? 'unreadable'}.`);
    }
  }
  if (bytes.byteLength === 0) throw badRequest(id, 'transcribe got an empty audio file.');
  const base = req.path ? req.path.split(/[\\/]/).pop()! : 'audio';
  // Telegram's voice notes are Ogg/Opus named .oga: Whisper knows the format by the name `.ogg`.
  const name = /\.oga$/i.test(base)
    ? base.replace(/\.oga$/i, '.ogg')
    : /\.[a-z0-9]+$/i.test(base)
      ? base
      : `${base}.${extOf(req.mimeType)}`;
  return { bytes, name, ...(req.mimeType ? { type: req.mimeType } : {}) };
}

function extOf(mime: string | undefined): string {
  const sub = (mime ?? '').split(';')[0]!.split('/')[1] ?? '';
  return ({ mpeg: 'mp3', 'x-wav': 'wav', wave: 'wav', mp4: 'm4a', 'x-m4a': 'm4a' } as Record<string, string>)[sub] ?? (sub || 'ogg');
}
