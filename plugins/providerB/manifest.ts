/**
 * providerB: Google Gemini. Data only; @google/genai is imported on the first call.
 */
import { Type, type PluginManifest } from '../../sdk/index.js';
import { providerKeys } from '../../sdk/vendors/common.js';

/** Gemini's public API (the client adds the API version, v1beta). */
export const DEFAULT_BASE_URL = 'https://generativelanguage.googleapis.com';

const manifest = {
  id: 'providerB',
  version: '1.0.0',
  kind: 'provider',
  description: 'Google Gemini (chat with function calling and vision, embeddings, images, speech) through @google/genai.',
  provides: ['provider:providerB'],
  permissions: { network: true, secrets: ['providerBApiKey'] },
  config: {
    ...providerKeys({ id: 'providerB', vendor: 'Google Gemini', baseUrl: DEFAULT_BASE_URL, keyNote: 'The SPEC classes it APPROVAL.' }),
    providerBComputerUseEnabled: {
      schema: Type.Boolean(),
      default: false,
      env: ['PROVIDERB_COMPUTER_USE_ENABLED'],
      policy: 'APPROVAL',
      description:
        'Experimental screen control with a Gemini computer-use model (default false). Read by the plugin that drives the screen; providerB itself only offers chat.',
    },
    providerBComputerUseModel: {
      schema: Type.String({ minLength: 1 }),
      env: ['PROVIDERB_COMPUTER_USE_MODEL'],
      policy: 'APPROVAL',
      description:
        'Gemini model used for computer use when providerBComputerUseEnabled is true (no default: the identifier holds a vendor name).',
    },
  },
} as const satisfies PluginManifest;

export default manifest;
