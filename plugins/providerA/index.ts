/**
 * providerA (OpenAI): provides `provider:providerA` through the shared OpenAI-compatible adapter.
 */
import { definePlugin } from '../../sdk/index.js';
import { readProviderSettings } from '../../sdk/vendors/common.js';
import { createOpenAICompatibleProvider, OPENAI_VOICES } from '../../sdk/vendors/openai-compatible.js';
import manifest, { DEFAULT_BASE_URL } from './manifest.js';

export default definePlugin({
  manifest,
  setup(ctx) {
    const provider = createOpenAICompatibleProvider({
      id: 'providerA',
      settings: () => readProviderSettings(ctx.config, 'providerA', DEFAULT_BASE_URL),
      vision: true,
      maxCompletionTokens: true,
      embeddings: { defaultModel: 'text-embedding-3-small' },
      images: { defaultModel: 'gpt-image-1' },
      speech: { defaultModel: 'tts-1', voices: OPENAI_VOICES },
      transcription: { defaultModel: 'whisper-1' },
    });
    ctx.provide('provider:providerA', provider);
    return {};
  },
});
