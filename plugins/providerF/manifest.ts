/**
 * providerF: NVIDIA NIM. Data only; the openai client is imported on the first call.
 */
import type { PluginManifest } from '../../sdk/index.js';
import { providerKeys } from '../../sdk/vendors/common.js';

/** NVIDIA NIM's public API. */
export const DEFAULT_BASE_URL = 'https://integrate.api.nvidia.com/v1';

const manifest = {
  id: 'providerF',
  version: '1.0.0',
  kind: 'provider',
  description: 'NVIDIA NIM (OpenAI-compatible inference microservices) through the openai client.',
  provides: ['provider:providerF'],
  permissions: { network: true, secrets: ['providerFApiKey'] },
  config: {
    ...providerKeys({ id: 'providerF', vendor: 'NVIDIA NIM', baseUrl: DEFAULT_BASE_URL, keyNote: 'The SPEC classes it APPROVAL.' }),
  },
} as const satisfies PluginManifest;

export default manifest;
