/**
 * providerK: Cerebras. Data only; the openai client is imported on the first call.
 */
import type { PluginManifest } from '../../sdk/index.js';
import { providerKeys } from '../../sdk/vendors/common.js';

/** Cerebras's public API. */
export const DEFAULT_BASE_URL = 'https://api.cerebras.ai/v1';

const manifest = {
  id: 'providerK',
  version: '1.0.0',
  kind: 'provider',
  description: 'Cerebras (OpenAI-compatible chat completions) through the openai client.',
  provides: ['provider:providerK'],
  permissions: { network: true, secrets: ['providerKApiKey'] },
  config: {
    ...providerKeys({
      id: 'providerK',
      vendor: 'Cerebras',
      baseUrl: DEFAULT_BASE_URL,
      keyNote: 'The SPEC gives it no class; APPROVAL like the other provider keys.',
    }),
  },
} as const satisfies PluginManifest;

export default manifest;
