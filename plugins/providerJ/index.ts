/**
 * providerJ (xAI): provides `provider:providerJ` through the shared OpenAI-compatible adapter.
 */
import { definePlugin } from '../../sdk/index.js';
import { readProviderSettings } from '../../sdk/vendors/common.js';
import { createOpenAICompatibleProvider } from '../../sdk/vendors/openai-compatible.js';
import manifest, { DEFAULT_BASE_URL } from './manifest.js';

export default definePlugin({
  manifest,
  setup(ctx) {
    const provider = createOpenAICompatibleProvider({
      id: 'providerJ',
      settings: () => readProviderSettings(ctx.config, 'providerJ', DEFAULT_BASE_URL),
      vision: false,
    });
    ctx.provide('provider:providerJ', provider);
    return {};
  },
});
