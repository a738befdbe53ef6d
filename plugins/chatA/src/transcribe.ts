/**
 * Speech to text for inbound voice notes and audio: the first configured provider that offers `transcribe`
 * (providerA, then providerB), looked up at each note so a key set later takes effect without a restart.
 */
import type { PluginContext } from '../../../sdk/index.js';

/** The providers asked, in order (as `send_voice_note` chooses its speaker). */
export const SPEECH_PROVIDERS = ['providerA', 'providerB'] as const;

/**
 * A transcriber for inbound audio: `undefined` when no provider can transcribe; rejects when the provider fails
 * (the caller keeps the message and says so).
 */
export function makeTranscriber(ctx: Pick<PluginContext, 'use'>) {
  return async (path: string, mimeType: string, signal?: AbortSignal): Promise<string | undefined> => {
    for (const id of SPEECH_PROVIDERS) {
      const p = ctx.use(`provider:${id}`);
      if (!p || typeof p.transcribe !== 'function' || !p.configured().ok) continue;
      const { text } = await p.transcribe({ path, mimeType, ...(signal ? { signal } : {}) });
      return text.trim();
    }
    return undefined;
  };
}
