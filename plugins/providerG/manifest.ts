/**
 * providerG: Ollama, the local model runner. Data only; the `ollama` client is imported on the first call.
 * Model names are `<model>:<size>` (e.g. `llama3.1:8b`).
 */
import { Type, type PluginManifest } from '../../sdk/index.js';
import { DEFAULT_TIMEOUT_MS } from '../../sdk/vendors/common.js';

/** Ollama's default address: loopback, port 11434. */
export const DEFAULT_API_URL = 'http://127.0.0.1:11434';

const manifest = {
  id: 'providerG',
  version: '1.0.0',
  kind: 'provider',
  description: 'Ollama local models (chat with native tools and vision, embeddings) through the ollama client.',
  provides: ['provider:providerG'],
  permissions: { network: true },
  config: {
    providerGEnabled: {
      schema: Type.Boolean(),
      default: false,
      env: ['PROVIDERG_ENABLED'],
      policy: 'APPROVAL',
      description:
        'Use the local Ollama server (renamed from ollamaEnabled). Off by default: nothing is sent to providerGApiUrl until it is true. ' +
        'APPROVAL (the SPEC gives no class) because it adds a provider the agent may route prompts to.',
    },
    providerGApiUrl: {
      schema: Type.String({ minLength: 1, pattern: '^https?://' }),
      default: DEFAULT_API_URL,
      env: ['PROVIDERG_API_URL'],
      policy: 'SAFE',
      description:
        `Base URL of the Ollama server (default ${DEFAULT_API_URL}); it also serves as providerG's base-URL override. ` +
        'SAFE per the SPEC: no key is ever sent to it.',
    },
    providerGTimeoutSeconds: {
      schema: Type.Number({ exclusiveMinimum: 0, maximum: 3600 }),
      default: DEFAULT_TIMEOUT_MS / 1000,
      env: ['PROVIDERG_TIMEOUT_SECONDS'],
      policy: 'SAFE',
      description: `Seconds one Ollama request may take before it is abandoned (default ${DEFAULT_TIMEOUT_MS / 1000}); a request's own timeout wins.`,
    },
  },
} as const satisfies PluginManifest;

export default manifest;
