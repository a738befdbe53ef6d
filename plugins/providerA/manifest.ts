/**
 * providerA: OpenAI. Data only; the openai client is imported on the first call.
 */
import type { PluginManifest } from '../../sdk/index.js';
import { providerKeys } from '../../sdk/vendors/common.js';

/** OpenAI's public API. */
export const DEFAULT_BASE_URL = 'https://api.openai.com/v1';

const manifest = {
  id: 'providerA',
  version: '1.0.0',
  kind: 'provider',
  description: 'OpenAI (chat with tools and vision, embeddings, images, speech) through the openai client.',
  provides: ['provider:providerA'],
  permissions: { network: true, secrets: ['providerAApiKey'] },
  config: {
    ...providerKeys({ id: 'providerA', vendor: 'OpenAI', baseUrl: DEFAULT_BASE_URL, keyNote: 'The SPEC classes it APPROVAL.' }),
  },
} as const satisfies PluginManifest;

export default manifest;
