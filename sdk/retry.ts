/**
 * Retry with exponential backoff that honours a server's Retry-After, for provider and channel plugins.
 */

export interface RetryDecision {
  retry: boolean;
  /** Wait this long instead of the computed backoff (Retry-After). */
  afterMs?: number;
}

export interface RetryOptions {
  /** Retries after the first attempt (default 3). */
  retries?: number;
  /** First backoff (default 500 ms), doubled each time, capped by `maxMs` (default 8000 ms). */
  baseMs?: number;
  maxMs?: number;
  signal?: AbortSignal;
  /** Whether an error is worth another attempt (e.g. 429, 5xx, a reset connection). */
  classify(error: unknown): RetryDecision;
  /** Called before each wait (for logging). */
  onRetry?(error: unknown, attempt: number, waitMs: number): void;
}

/**
 * `p`, or a rejection when it takes longer than `ms` (an Error named `TimeoutError`, "no answer in N s") or `signal`
 * aborts (its reason). The call behind `p` is not cancelled: it is left to finish, and its outcome is dropped.
 * @example const page = await bounded(client.conversations.history({ channel }), 30_000, signal);
 */
export function bounded<T>(p: Promise<T>, ms: number, signal: AbortSignal): Promise<T> {
  p.catch(() => undefined);
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(Object.assign(new Error(`no answer in ${ms / 1000} s`), { name: 'TimeoutError' })), ms);
    const off = onAbort(signal, () => reject(signal.reason));
    p.then(resolve, reject).finally(() => {
      clearTimeout(t);
      off();
    });
  });
}

/**
 * Calls `fn` once when `signal` aborts, or at once when it already has; returns what removes the listener (call it
 * when the work ends, so a long-lived signal keeps nothing from it).
 */
function onAbort(signal: AbortSignal, fn: () => void): () => void {
  if (signal.aborted) {
    fn();
    return () => undefined;
  }
  signal.addEventListener('abort', fn, { once: true });
  return () => signal.removeEventListener('abort', fn);
}

/** A signal that follows several others for one call; see {@link linkSignals}. */
export interface LinkedSignal {
  signal: AbortSignal;
  /** Stops following the inputs (removes the listeners on them); call it in a `finally` when the call ends. */
  dispose(): void;
}

/**
 * A per-call signal that aborts, with the first reason, when any of `signals` aborts (at once if one already has);
 * `undefined` entries are skipped, and a lone signal is returned as it is. Use it instead of `AbortSignal.any`, which
 * in Node keeps an entry in a long-lived input (a plugin's `ctx.signal`) for every call, never freed
 * (nodejs/node#55351): this adds one listener per input and `dispose()` removes them.
 * @example
 * const link = linkSignals([req.signal, ctx.signal]);
 * try {
 *   return await client.chat({ ...req, signal: link.signal });
 * } finally {
 *   link.dispose();
 * }
 */
export function linkSignals(signals: ReadonlyArray<AbortSignal | undefined>): LinkedSignal {
  const inputs = signals.filter((s): s is AbortSignal => s !== undefined);
  if (inputs.length === 1) return { signal: inputs[0]!, dispose: () => undefined };
  const ac = new AbortController();
  const offs: Array<() => void> = [];
  const dispose = () => {
    for (const off of offs.splice(0)) off();
  };
  for (const s of inputs) {
    offs.push(
      onAbort(s, () => {
        ac.abort(s.reason);
        dispose();
      }),
    );
    if (ac.signal.aborted) break; // an input already was: the listeners added before it are gone already
  }
  return { signal: ac.signal, dispose };
}

/**
 * Runs `fn` with {@link linkSignals}' signal of `signals`, unlinked when `fn` settles.
 * @example const r = await withLinkedSignal([call.signal, ctx.signal], (signal) => fetchPage(url, { signal }));
 */
export async function withLinkedSignal<T>(
  signals: ReadonlyArray<AbortSignal | undefined>,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const link = linkSignals(signals);
  try {
    return await fn(link.signal);
  } finally {
    link.dispose();
  }
}

/**
 * Resolves after `ms`; rejects with the signal's reason (or an "aborted" error) as soon as `signal` aborts.
 * @example await sleep(retryAfterMs, ctx.signal);
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason ?? new Error('aborted'));
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason ?? new Error('aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Runs `fn` until it succeeds, the error is not retryable, retries run out, or `signal` aborts.
 * @example await withRetry(() => client.chat(req), { classify: (e) => ({ retry: status(e) >= 500 }) })
 */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, o: RetryOptions): Promise<T> {
  const retries = o.retries ?? 3;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (e) {
      if (o.signal?.aborted || attempt >= retries) throw e;
      const d = o.classify(e);
      if (!d.retry) throw e;
      const backoff = Math.min(o.maxMs ?? 8000, (o.baseMs ?? 500) * 2 ** attempt);
      const wait = Math.min(60_000, Math.max(0, d.afterMs ?? backoff));
      o.onRetry?.(e, attempt + 1, wait);
      await sleep(wait, o.signal);
    }
  }
}

/** Milliseconds from a Retry-After header value (seconds or an HTTP date); undefined when absent or invalid. */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const secs = Number(value);
  if (Number.isFinite(secs)) return Math.max(0, secs * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
