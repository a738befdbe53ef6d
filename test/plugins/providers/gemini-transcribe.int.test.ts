/**
 * providerB's speech to text: the real `@google/genai` client sends the audio inline to a multimodal Gemini model
 * (the loopback fake) with the instruction to write it down, and hands back the text.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProviderCapability } from '../../../sdk/index.js';
import { geminiReply, startGeminiFake, type ScriptedServer } from '../../fakes/gemini-server.js';
import { startProviders, type ProviderKernel } from './openai-kernel.js';

const KEY = 'AIzaSyFAKE-gemini-stt-0123456789';

describe('providerB transcribe', () => {
  let fake: ScriptedServer;
  let k: ProviderKernel;
  let b: ProviderCapability;

  beforeAll(async () => {
    fake = await startGeminiFake();
    k = await startProviders(['providerB'], { providerBApiKey: KEY, providerBBaseUrl: fake.url });
    b = k.provider('providerB');
  });
  afterAll(async () => {
    await k?.stop();
    await fake?.close();
  });

  it('sends the audio inline to gemini-2.5-flash and returns what the model wrote down', async () => {
    fake.script({ ...geminiReply({ text: '  call me back at noon \n' }), match: ':generateContent' });
    const out = await b.transcribe!({ data: Buffer.from('OggS-voice'), mimeType: 'audio/ogg', language: 'en' });
    expect(out).toEqual({ text: 'call me back at noon', model: 'gemini-2.5-flash' });
    const r = fake.requests[0]!;
    expect(r.url).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(r.headers['x-goog-api-key']).toBe(KEY);
    const [ask, audio] = r.body.contents[0].parts;
    expect(ask.text).toMatch(/^Transcribe this audio verbatim \(language: en\)/);
    expect(audio.inlineData).toEqual({ mimeType: 'audio/ogg', data: Buffer.from('OggS-voice').toString('base64') });
    await expect(b.transcribe!({})).rejects.toThrow(/needs the audio/);
    expect(fake.requests).toHaveLength(1);
  });
});
