/**
 * The shared vendor helpers (sdk/vendors/common.ts): error classification, redaction, the retry loop.
 */
import { describe, expect, it } from 'vitest';
import { ProviderError } from '../../../sdk/index.js';
import { callWithRetry, parseToolArguments, redact, registerSecret, toProviderError } from '../../../sdk/vendors/common.js';

describe('toProviderError', () => {
  it('classifies statuses and reads Retry-After (seconds, HTTP date, retry-after-ms)', () => {
    const h = (o: Record<string, string>) => new Headers(o);
    expect(toProviderError('p', { status: 429, headers: h({ 'retry-after': '7' }), message: 'x' }).info).toEqual({
      provider: 'p',
      status: 429,
      retryable: true,
      retryAfterMs: 7000,
    });
    expect(toProviderError('p', { status: 503, headers: h({ 'retry-after-ms': '250' }) }).info.retryAfterMs).toBe(250);
    const date = new Date(Date.now() + 60_000).toUTCString();
    expect(toProviderError('p', { status: 503, headers: { 'Retry-After': date } }).info.retryAfterMs).toBeGreaterThan(50_000);
    expect(toProviderError('p', { status: 400, message: 'bad' }).info.retryable).toBe(false);
    expect(toProviderError('p', { status: 404, message: 'no' }).message).toMatch(/unknown model or wrong base URL/);
  });

  it('retries connection resets found along the cause chain, not aborts or plain errors', () => {
    const reset = new TypeError('fetch failed', { cause: Object.assign(new Error('socket'), { code: 'ECONNRESET' }) });
    expect(toProviderError('p', reset).info.retryable).toBe(true);
    expect(toProviderError('p', Object.assign(new Error('x'), { name: 'AbortError' })).info.retryable).toBe(false);
    expect(toProviderError('p', new Error('boom')).info.retryable).toBe(false);
  });

  it('blanks registered keys and key-shaped text out of messages', () => {
    registerSecret('my-registered-secret-value');
    const e = toProviderError('p', {
      status: 401,
      message: 'key my-registered-secret-value, url https://h/x?key=AIzaSomething123456789&alt=json, Bearer abcdefghijk, sk-proj-abcdefgh',
    });
    expect(e.message).not.toMatch(/my-registered-secret-value|AIzaSomething|abcdefghijk|sk-proj-abcdefgh/);
    expect(redact('x-goog-api-key: zzzzzzzzzz')).toBe('x-goog-api-key: [redacted]');
    expect(redact('groq gsk_abcdefghij1234 nvidia nvapi-abcdefghij')).toBe('groq [redacted] nvidia [redacted]');
  });
});

describe('callWithRetry', () => {
  it('retries retryable failures, honours Retry-After, and passes a signal to each attempt', async () => {
    let n = 0;
    const signals: AbortSignal[] = [];
    const out = await callWithRetry(
      'p',
      async (signal) => {
        signals.push(signal);
        if (++n < 3) throw { status: 429, headers: new Headers({ 'retry-after': '0' }) };
        return 'ok';
      },
      { retries: 3 },
    );
    expect(out).toBe('ok');
    expect(n).toBe(3);
    expect(signals.every((s) => s instanceof AbortSignal && !s.aborted)).toBe(true);
  });

  it('gives up after the retries with a ProviderError, and does not retry a 400', async () => {
    let n = 0;
    await expect(
      callWithRetry(
        'p',
        async () => {
          n++;
          throw { status: 500, headers: new Headers({ 'retry-after': '0' }) };
        },
        { retries: 2 },
      ),
    ).rejects.toBeInstanceOf(ProviderError);
    expect(n).toBe(3);
    n = 0;
    await expect(
      callWithRetry('p', async () => {
        n++;
        throw { status: 400 };
      }),
    ).rejects.toMatchObject({ info: { status: 400, retryable: false } });
    expect(n).toBe(1);
  });

  it('times out an attempt and is cancelled by the caller, even while waiting between attempts', async () => {
    const hang = (signal: AbortSignal) => new Promise<never>((_, rej) => signal.addEventListener('abort', () => rej(signal.reason)));
    await expect(callWithRetry('p', hang, { timeoutMs: 30 })).rejects.toThrow(/timeout/);
    const ac = new AbortController();
    const p = callWithRetry(
      'p',
      async () => {
        throw { status: 503, headers: new Headers({ 'retry-after': '30' }) };
      },
      { signal: ac.signal },
    );
    setTimeout(() => ac.abort(), 20);
    await expect(p).rejects.toThrow(/cancelled/);
  });
});

describe('parseToolArguments', () => {
  it('keeps objects, and turns invalid or non-object JSON into {} with raw kept', () => {
    expect(parseToolArguments('{"a":1}')).toEqual({ arguments: { a: 1 } });
    expect(parseToolArguments({ a: 1 })).toEqual({ arguments: { a: 1 } });
    expect(parseToolArguments('{"a":')).toEqual({ arguments: {}, raw: '{"a":' });
    expect(parseToolArguments('[1]')).toEqual({ arguments: {}, raw: '[1]' });
    expect(parseToolArguments('')).toEqual({ arguments: {} });
  });
});
