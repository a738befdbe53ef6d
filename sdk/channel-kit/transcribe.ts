/**
 * Speech to text for inbound voice notes and audio, for every channel: the first configured provider that offers
 * `transcribe` (providerA, then providerB), looked up at each note so a key set later takes effect without a
 * restart; and the line a note adds to the task.
 */
import { errorMessage } from '../errors.js';
import type { PluginContext } from '../plugin.js';

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

/** A transcriber as `makeTranscriber` makes it. */
export type Transcribe = (path: string, mimeType: string, signal?: AbortSignal) => Promise<string | undefined>;

/**
 * The line a voice note or audio file adds to the task: its transcript inside an untrusted marker (a machine heard
 * it, and anyone may have spoken), or why there is none. A failed transcription never loses the message.
 * @example text += `\n${await transcriptNote('voice', path, 'audio/ogg', { transcribe, warn: (m) => log.warn(m) })}`;
 */
export async function transcriptNote(
  kind: 'voice' | 'audio',
  path: string,
  mime: string,
  d: { transcribe?: Transcribe | undefined; signal?: AbortSignal | undefined; warn?: ((message: string) => void) | undefined },
): Promise<string> {
  const none = `[${kind} note received; it was not transcribed because no speech-to-text provider is configured]`;
  if (!d.transcribe) return none;
  try {
    const text = await d.transcribe(path, mime, d.signal);
    if (text === undefined) return none;
    if (!text) return `[${kind} note received; the transcription is empty (silence?). The audio is saved at ${path}]`;
    // A closing marker inside the speech cannot end the untrusted block early.
    const safe = text.replace(/<\/?untrusted_transcript/gi, (m) => m.replace('<', '&lt;'));
    return `[${kind} transcript, machine transcription]\n<untrusted_transcript kind="${kind}">\n${safe}\n</untrusted_transcript>`;
  } catch (e) {
    d.warn?.(`Transcription of a ${kind} note failed; the message goes on untranscribed: ${errorMessage(e)}`);
    return `[${kind} note received; transcription failed, so it was not transcribed. The audio is saved at ${path}]`;
  }
}
