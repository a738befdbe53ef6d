/**
 * providerA's speech to text: the real `openai` client uploads the audio as multipart to the loopback fake's
 * POST /v1/audio/transcriptions and hands back its transcript.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError, type ProviderCapability } from '../../../sdk/index.js';
import { errorReply, FAKE_TRANSCRIPT, startOpenAIFake, type ScriptedServer } from '../../fakes/openai-server.js';
import { rm, tmp } from '../../helpers.js';
import { startProviders, type ProviderKernel } from './openai-kernel.js';

const KEY = 'sk-test-transcribe0123456789secret';

describe('providerA transcribe', () => {
  let fake: ScriptedServer;
  let k: ProviderKernel;
  let a: ProviderCapability;
  let dir: string;

  beforeAll(async () => {
    fake = await startOpenAIFake();
    k = await startProviders(['providerA'], { providerAApiKey: KEY, providerABaseUrl: fake.url });
    a = k.provider('providerA');
    dir = tmp('keel-stt-');
  });
  afterAll(async () => {
    await k?.stop();
    await fake?.close();
    rm(dir);
  });
  afterEach(() => {
    fake.requests.length = 0;
  });

  it('uploads a voice note file as multipart with whisper-1 and returns the transcript', async () => {
    const file = join(dir, '9_51_voice.oga');
    writeFileSync(file, 'OggS-fake-opus-bytes');
    const out = await a.transcribe!({ path: file, mimeType: 'audio/ogg', language: 'en' });
    expect(out).toEqual({ text: FAKE_TRANSCRIPT, model: 'whisper-1' });
    expect(fake.requests).toHaveLength(1);
    const r = fake.requests[0]!;
    expect(r.method).toBe('POST');
    expect(r.url).toBe('/v1/audio/transcriptions');
    expect(r.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(r.body.fields).toMatchObject({ model: 'whisper-1', language: 'en', response_format: 'json' });
    // .oga (Telegram's name) goes up as .ogg, the name Whisper recognises.
    expect(r.body.files.file).toMatchObject({ name: '9_51_voice.ogg', type: 'audio/ogg' });
    expect(r.body.files.file.data.toString()).toBe('OggS-fake-opus-bytes');
  });

  it('takes bytes instead of a path, and another model', async () => {
    const out = await a.transcribe!({ data: Buffer.from('ID3-mp3'), mimeType: 'audio/mpeg', model: 'gpt-4o-transcribe' });
    expect(out.text).toBe(FAKE_TRANSCRIPT);
    const r = fake.requests[0]!;
    expect(r.body.fields.model).toBe('gpt-4o-transcribe');
    expect(r.body.files.file).toMatchObject({ name: 'audio.mp3', type: 'audio/mpeg' });
  });

  it('bad input is refused before any request; a vendor error is a ProviderError without the key', async () => {
    await expect(a.transcribe!({})).rejects.toThrow(/needs the audio/);
    await expect(a.transcribe!({ path: join(dir, 'missing.ogg') })).rejects.toThrow(/cannot read the audio file .*ENOENT/);
    await expect(a.transcribe!({ data: new Uint8Array() })).rejects.toThrow(/empty audio/);
    expect(fake.requests).toHaveLength(0);
    fake.script({ ...errorReply(400, 'Invalid file format.'), match: '/audio/transcriptions' });
    let err: unknown;
    try {
      await a.transcribe!({ data: Buffer.from('x'), mimeType: 'audio/ogg' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ProviderError);
    expect((err as ProviderError).info).toMatchObject({ provider: 'providerA', status: 400, retryable: false });
    expect(String((err as Error).message)).not.toContain(KEY);
  });
});
