/**
 * providerJ: xAI. Data only; the openai client is imported on the first call.
 */
import type { PluginManifest } from '../../sdk/index.js';
import { providerKeys } from '../../sdk/vendors/common.js';

/** xAI's public API. */
export const DEFAULT_BASE_URL = 'https://api.x.ai/v1';

const manifest = {
  id: 'providerJ',
  version: '1.0.0',
  kind: 'provider',
  description: 'xAI (OpenAI-compatible chat completions) through the openai client.',
  provides: ['provider:providerJ'],
  permissions: { network: true, secrets: ['providerJApiKey'] },
  config: {
    ...providerKeys({
      id: 'providerJ',
      vendor: 'xAI',
      baseUrl: DEFAULT_BASE_URL,
      keyNote: 'The SPEC gives it no class; APPROVAL like the other provider keys.',
    }),
  },
} as const satisfies PluginManifest;

export default manifest;
