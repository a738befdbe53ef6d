/**
 * providerH: Mistral. Data only; the openai client is imported on the first call.
 */
import type { PluginManifest } from '../../sdk/index.js';
import { providerKeys } from '../../sdk/vendors/common.js';

/** Mistral's public API. */
export const DEFAULT_BASE_URL = 'https://api.mistral.ai/v1';

const manifest = {
  id: 'providerH',
  version: '1.0.0',
  kind: 'provider',
  description: 'Mistral (OpenAI-compatible chat completions) through the openai client.',
  provides: ['provider:providerH'],
  permissions: { network: true, secrets: ['providerHApiKey'] },
  config: {
    ...providerKeys({
      id: 'providerH',
      vendor: 'Mistral',
      baseUrl: DEFAULT_BASE_URL,
      keyNote: 'The SPEC gives it no class; APPROVAL like the other provider keys.',
    }),
  },
} as const satisfies PluginManifest;

export default manifest;
