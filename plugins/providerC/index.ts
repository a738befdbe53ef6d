/**
 * providerC (Anthropic): provides `provider:providerC` through the Messages API adapter in sdk/vendors.
 * Settings are read at each call, so a changed key or base URL applies without a restart.
 */
import { definePlugin, ProviderError, type ChatRequest, type ProviderCapability } from '../../sdk/index.js';
import { withLinkedSignal } from '../../sdk/retry.js';
import { anthropicChat } from '../../sdk/vendors/anthropic.js';
import { missingKey, readProviderSettings } from '../../sdk/vendors/common.js';
import manifest, { DEFAULT_BASE_URL } from './manifest.js';

const ID = 'providerC';

export default definePlugin({
  manifest,
  setup(ctx) {
    const settings = () => readProviderSettings(ctx.config, ID, DEFAULT_BASE_URL);
    const configured: ProviderCapability['configured'] = () =>
      settings().apiKey ? { ok: true } : missingKey('providerCApiKey', 'PROVIDERC_API_KEY');
    const provider: ProviderCapability = {
      id: ID,
      vision: true,
      configured,
      async chat(req: ChatRequest) {
        const s = settings();
        if (!s.apiKey) {
          throw new ProviderError(`${ID}: ${(configured() as { missing: string }).missing}`, { provider: ID, retryable: false });
        }
        const vendor = { provider: ID, apiKey: s.apiKey, baseUrl: s.baseUrl, timeoutMs: s.timeoutMs };
        // Stopping the plugin cancels its calls too.
        return withLinkedSignal([req.signal, ctx.signal], (signal) => anthropicChat(vendor, { ...req, signal }));
      },
    };
    ctx.provide(`provider:${ID}`, provider);
    const c = configured();
    if (!c.ok) ctx.log.debug(`${ID} is idle: ${c.missing}`);
    return {};
  },
});
