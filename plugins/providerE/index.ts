/**
 * providerE (OpenRouter): provides `provider:providerE` through the shared OpenAI-compatible adapter.
 */
import { definePlugin } from '../../sdk/index.js';
import { readProviderSettings } from '../../sdk/vendors/common.js';
import { createOpenAICompatibleProvider } from '../../sdk/vendors/openai-compatible.js';
import manifest, { DEFAULT_BASE_URL } from './manifest.js';

export default definePlugin({
  manifest,
  setup(ctx) {
    const provider = createOpenAICompatibleProvider({
      id: 'providerE',
      settings: () => readProviderSettings(ctx.config, 'providerE', DEFAULT_BASE_URL),
      vision: false,
      headers: () => {
        const h: Record<string, string> = {};
        const referer = ctx.config.get('providerEReferer');
        const title = ctx.config.get('providerEAppName');
        if (referer) h['HTTP-Referer'] = referer;
        if (title) h['X-Title'] = title;
        return h;
      },
    });
    ctx.provide('provider:providerE', provider);
    return {};
  },
});
