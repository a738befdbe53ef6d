/**
 * providerD (AWS Bedrock Converse): provides `provider:providerD` through the Converse adapter in sdk/vendors.
 * Settings are read at each call; the client is rebuilt only when they change and closed when the plugin stops.
 */
import { definePlugin, ProviderError, type ChatRequest, type ProviderCapability } from '../../sdk/index.js';
import { withLinkedSignal } from '../../sdk/retry.js';
import { createBedrockClient } from '../../sdk/vendors/bedrock.js';
import { DEFAULT_TIMEOUT_MS, registerSecret } from '../../sdk/vendors/common.js';
import manifest from './manifest.js';

const ID = 'providerD';

/** Required keys with the environment variables that supply them. */
const REQUIRED = [
  ['providerDRegion', 'PROVIDERD_REGION or AWS_REGION'],
  ['providerDAccessKeyId', 'PROVIDERD_ACCESS_KEY_ID or AWS_ACCESS_KEY_ID'],
  ['providerDSecretAccessKey', 'PROVIDERD_SECRET_ACCESS_KEY or AWS_SECRET_ACCESS_KEY'],
] as const;

export default definePlugin({
  manifest,
  setup(ctx) {
    const get = (k: string): string | undefined => {
      const v = ctx.config.has(k) ? ctx.config.get<unknown>(k) : undefined;
      return typeof v === 'string' && v ? v : undefined;
    };
    const configured: ProviderCapability['configured'] = () => {
      const missing = REQUIRED.filter(([k]) => !get(k));
      if (!missing.length) return { ok: true };
      const names = missing.map(([k, env]) => `${k} (environment variable ${env})`);
      const list = names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
      return {
        ok: false,
        missing: `${list} ${names.length === 1 ? 'is' : 'are'} not set: set ${names.length === 1 ? 'it' : 'them'} in the configuration file or the environment.`,
      };
    };
    const bedrock = createBedrockClient();
    const provider: ProviderCapability = {
      id: ID,
      vision: true,
      configured,
      async chat(req: ChatRequest) {
        const c = configured();
        if (!c.ok) throw new ProviderError(`${ID}: ${c.missing}`, { provider: ID, retryable: false });
        const secs = ctx.config.get('providerDTimeoutSeconds');
        const sessionToken = get('providerDSessionToken');
        const baseUrl = get('providerDBaseUrl');
        const settings = {
          provider: ID,
          region: get('providerDRegion')!,
          accessKeyId: get('providerDAccessKeyId')!,
          secretAccessKey: get('providerDSecretAccessKey')!,
          ...(sessionToken ? { sessionToken } : {}),
          ...(baseUrl ? { baseUrl } : {}),
          timeoutMs: typeof secs === 'number' && secs > 0 ? secs * 1000 : DEFAULT_TIMEOUT_MS,
        };
        // Stopping the plugin cancels its calls too.
        return withLinkedSignal([req.signal, ctx.signal], (signal) => bedrock.chat(settings, { ...req, signal }));
      },
    };
    for (const k of ['providerDAccessKeyId', 'providerDSecretAccessKey', 'providerDSessionToken']) registerSecret(get(k));
    ctx.provide(`provider:${ID}`, provider);
    const c = configured();
    if (!c.ok) ctx.log.debug(`${ID} is idle: ${c.missing}`);
    return { stop: () => bedrock.destroy() };
  },
});
