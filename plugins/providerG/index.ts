/**
 * providerG (Ollama): provides `provider:providerG` through the Ollama adapter in sdk/vendors: chat with tools
 * and images, and embeddings (default model `nomic-embed-text` when the request names none).
 */
import { definePlugin, ProviderError, type ChatRequest, type EmbedRequest, type ProviderCapability } from '../../sdk/index.js';
import { withLinkedSignal } from '../../sdk/retry.js';
import { DEFAULT_TIMEOUT_MS } from '../../sdk/vendors/common.js';
import { ollamaChat, ollamaEmbed, type OllamaSettings } from '../../sdk/vendors/ollama.js';
import manifest, { DEFAULT_API_URL } from './manifest.js';

const ID = 'providerG';

export default definePlugin({
  manifest,
  setup(ctx) {
    const get = <T>(k: string): T | undefined => (ctx.config.has(k) ? ctx.config.get<T>(k) : undefined);
    const configured: ProviderCapability['configured'] = () =>
      get<boolean>('providerGEnabled') === true
        ? { ok: true }
        : {
            ok: false,
            missing:
              'providerGEnabled is false: set it to true (or the environment variable PROVIDERG_ENABLED=true) to use the local Ollama server at providerGApiUrl.',
          };
    const settings = (): OllamaSettings => {
      const c = configured();
      if (!c.ok) throw new ProviderError(`${ID}: ${c.missing}`, { provider: ID, retryable: false });
      const secs = get<number>('providerGTimeoutSeconds');
      return {
        provider: ID,
        apiUrl: get<string>('providerGApiUrl') || DEFAULT_API_URL,
        timeoutMs: typeof secs === 'number' && secs > 0 ? secs * 1000 : DEFAULT_TIMEOUT_MS,
      };
    };
    const provider: ProviderCapability = {
      id: ID,
      vision: true,
      configured,
      // Stopping the plugin cancels its calls too.
      chat: async (req: ChatRequest) => {
        const s = settings();
        return withLinkedSignal([req.signal, ctx.signal], (signal) => ollamaChat(s, { ...req, signal }));
      },
      embed: async (req: EmbedRequest) => {
        const s = settings();
        return withLinkedSignal([req.signal, ctx.signal], (signal) => ollamaEmbed(s, { ...req, signal }));
      },
    };
    ctx.provide(`provider:${ID}`, provider);
    const c = configured();
    if (!c.ok) ctx.log.debug(`${ID} is idle: ${c.missing}`);
    return {};
  },
});
