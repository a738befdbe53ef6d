/**
 * providerE: OpenRouter. Data only; the openai client is imported on the first call.
 */
import { Type, type PluginManifest } from '../../sdk/index.js';
import { providerKeys } from '../../sdk/vendors/common.js';

/** OpenRouter's public API. */
export const DEFAULT_BASE_URL = 'https://openrouter.ai/api/v1';

const manifest = {
  id: 'providerE',
  version: '1.0.0',
  kind: 'provider',
  description: 'OpenRouter (OpenAI-compatible model router, model ids `<vendor>/<model>`) through the openai client.',
  provides: ['provider:providerE'],
  permissions: { network: true, secrets: ['providerEApiKey'] },
  config: {
    ...providerKeys({ id: 'providerE', vendor: 'OpenRouter', baseUrl: DEFAULT_BASE_URL, keyNote: 'The SPEC classes it APPROVAL.' }),
    providerEReferer: {
      schema: Type.String({ minLength: 1 }),
      env: ['PROVIDERE_REFERER'],
      policy: 'APPROVAL',
      description: 'Optional site URL sent as the HTTP-Referer header, which OpenRouter uses for app ranking.',
    },
    providerEAppName: {
      schema: Type.String({ minLength: 1 }),
      env: ['PROVIDERE_APP_NAME'],
      policy: 'APPROVAL',
      description: 'Optional application name sent as the X-Title header, which OpenRouter uses for app ranking.',
    },
  },
} as const satisfies PluginManifest;

export default manifest;
