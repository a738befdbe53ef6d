/**
 * Which provider transcribes chatA's voice notes: the first configured one that can (providerA, then providerB).
 */
import { describe, expect, it } from 'vitest';
import { makeTranscriber } from '../../../sdk/channel-kit/index.js';
import type { ProviderCapability } from '../../../sdk/index.js';

const provider = (id: string, o: { ok: boolean; stt: boolean }, heard: string[]): ProviderCapability => ({
  id,
  vision: false,
  configured: () => (o.ok ? { ok: true } : { ok: false, missing: `${id}ApiKey` }),
  chat: async () => {
    throw new Error('not used');
  },
  ...(o.stt
    ? {
        transcribe: async (req) => {
          heard.push(`${id}:${req.path}:${req.mimeType}`);
          return { text: ` words from ${id} ` };
        },
      }
    : {}),
});

const ctxWith = (providers: Record<string, ProviderCapability>) => ({ use: ((name: string) => providers[name]) as never });

describe('chatA transcriber', () => {
  it('takes providerA when it is configured, else providerB; none gives undefined', async () => {
    const heard: string[] = [];
    const both = makeTranscriber(
      ctxWith({
        'provider:providerA': provider('providerA', { ok: true, stt: true }, heard),
        'provider:providerB': provider('providerB', { ok: true, stt: true }, heard),
      }),
    );
    expect(await both('/d/v.ogg', 'audio/ogg')).toBe('words from providerA');
    const bOnly = makeTranscriber(
      ctxWith({
        'provider:providerA': provider('providerA', { ok: false, stt: true }, heard),
        'provider:providerB': provider('providerB', { ok: true, stt: true }, heard),
      }),
    );
    expect(await bOnly('/d/w.ogg', 'audio/ogg')).toBe('words from providerB');
    expect(heard).toEqual(['providerA:/d/v.ogg:audio/ogg', 'providerB:/d/w.ogg:audio/ogg']);
    const none = makeTranscriber(ctxWith({ 'provider:providerA': provider('providerA', { ok: true, stt: false }, heard) }));
    expect(await none('/d/x.ogg', 'audio/ogg')).toBeUndefined();
  });
});
