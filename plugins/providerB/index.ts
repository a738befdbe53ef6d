/**
 * providerB (Google Gemini): provides `provider:providerB` through the Gemini adapter.
 */
import { definePlugin } from '../../sdk/index.js';
import { readProviderSettings } from '../../sdk/vendors/common.js';
import { createGeminiProvider } from '../../sdk/vendors/gemini.js';
import manifest, { DEFAULT_BASE_URL } from './manifest.js';

export default definePlugin({
  manifest,
  setup(ctx) {
    const provider = createGeminiProvider({
      id: 'providerB',
      settings: () => readProviderSettings(ctx.config, 'providerB', DEFAULT_BASE_URL),
    });
    ctx.provide('provider:providerB', provider);
    return {};
  },
});
