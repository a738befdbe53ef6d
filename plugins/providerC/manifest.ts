/**
 * providerC: Anthropic (Messages API). Data only; @anthropic-ai/sdk is imported on the first call.
 */
import type { PluginManifest } from '../../sdk/index.js';
import { providerKeys } from '../../sdk/vendors/common.js';

/** Anthropic's public API (the SDK appends /v1/messages). */
export const DEFAULT_BASE_URL = 'https://api.anthropic.com';

const manifest = {
  id: 'providerC',
  version: '1.0.0',
  kind: 'provider',
  description: 'Anthropic (chat with native tool use and vision) through the @anthropic-ai/sdk client.',
  provides: ['provider:providerC'],
  permissions: { network: true, secrets: ['providerCApiKey'] },
  config: {
    // providerCApiKey (PROVIDERC_API_KEY, APPROVAL, secret), providerCBaseUrl (PROVIDERC_BASE_URL, LOCKED),
    // providerCTimeoutSeconds (SAFE).
    ...providerKeys({
      id: 'providerC',
      vendor: 'Anthropic',
      baseUrl: DEFAULT_BASE_URL,
      keyNote: 'Keys start with sk-ant-. The SPEC classes it APPROVAL.',
    }),
  },
} as const satisfies PluginManifest;

export default manifest;
