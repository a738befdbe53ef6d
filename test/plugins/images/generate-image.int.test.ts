/**
 * generate_image through the real kernel and the real `openai` client against the loopback OpenAI fake: the file
 * under downloads/, SPEC's sizes and qualities mapped for the model, and the clear error without a provider.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PNG_1x1, startOpenAIFake, type ScriptedServer } from '../../fakes/openai-server.js';
import { startProviders, type ProviderKernel } from '../providers/openai-kernel.js';

const KEY = 'sk-test-images-0123456789';

describe('generate_image', () => {
  let fake: ScriptedServer;
  let k: ProviderKernel;

  beforeAll(async () => {
    fake = await startOpenAIFake();
    k = await startProviders(['providerA', 'providerB', 'images'], { providerAApiKey: KEY, providerABaseUrl: fake.url });
  });
  afterAll(async () => {
    await k?.stop();
    await fake?.close();
  });

  it('saves the image from providerA as a file under downloads/ and says where', async () => {
    const r = await k.kernel.execute('generate_image', { prompt: 'a red square', size: '1792x1024', quality: 'hd' }, k.kernel.operator);
    expect(r.success, r.result).toBe(true);
    const out = JSON.parse(r.result) as { path: string; mimeType: string; bytes: number; provider: string; model: string };
    expect(out).toMatchObject({ mimeType: 'image/png', provider: 'providerA', model: 'gpt-image-1', bytes: PNG_1x1.length });
    expect(dirname(out.path)).toBe(join(k.kernel.home, 'downloads'));
    expect(readFileSync(out.path).equals(PNG_1x1)).toBe(true);
    expect(statSync(out.path).mode & 0o777).toBe(0o600);
    const req = fake.requests.at(-1)!;
    expect(req.url).toBe('/v1/images/generations');
    // SPEC's landscape size and hd quality, in gpt-image-1's words.
    expect(req.body).toMatchObject({ model: 'gpt-image-1', prompt: 'a red square', size: '1536x1024', quality: 'high', n: 1 });
  });

  it('passes SPEC sizes to dall-e models as they are', async () => {
    await k.kernel.config.set('imageModelName', 'dall-e-3', { kind: 'operator' });
    try {
      const r = await k.kernel.execute('generate_image', { prompt: 'a tall tower', size: '1024x1792' }, k.kernel.operator);
      expect(r.success, r.result).toBe(true);
      expect(fake.requests.at(-1)!.body).toMatchObject({
        model: 'dall-e-3',
        size: '1024x1792',
        quality: 'standard',
        response_format: 'b64_json',
      });
    } finally {
      await k.kernel.config.set('imageModelName', '', { kind: 'operator' });
    }
  });

  it('refuses an unknown size before calling anything, and names the keys when no provider is configured', async () => {
    const before = fake.requests.length;
    const bad = await k.kernel.execute('generate_image', { prompt: 'x', size: '640x480' }, k.kernel.operator);
    expect(bad.success).toBe(false);
    expect(bad.code).toBe('KEEL_E_SKILL_INVALID_ARGS');
    const none = await k.kernel.execute('generate_image', { prompt: 'x', provider: 'providerB' }, k.kernel.operator);
    expect(none.success).toBe(false);
    expect(none.result).toMatch(/providerBApiKey/);
    expect(fake.requests.length).toBe(before);
    expect(existsSync(join(k.kernel.home, 'downloads'))).toBe(true);
  });
});
