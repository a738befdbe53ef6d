/**
 * providerI: Groq. Data only; the openai client is imported on the first call.
 */
import type { PluginManifest } from '../../sdk/index.js';
import { providerKeys } from '../../sdk/vendors/common.js';

/** Groq's public API. */
export const DEFAULT_BASE_URL = 'https://api.groq.com/openai/v1';

const manifest = {
  id: 'providerI',
  version: '1.0.0',
  kind: 'provider',
  description: 'Groq (OpenAI-compatible chat completions) through the openai client.',
  provides: ['provider:providerI'],
  permissions: { network: true, secrets: ['providerIApiKey'] },
  config: {
    ...providerKeys({
      id: 'providerI',
      vendor: 'Groq',
      baseUrl: DEFAULT_BASE_URL,
      keyNote: 'The SPEC gives it no class; APPROVAL like the other provider keys.',
    }),
  },
} as const satisfies PluginManifest;

export default manifest;
