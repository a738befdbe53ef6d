/**
 * The OpenAI-compatible endpoint: any OpenAI client library or chat UI talks to the Keel agent (docs/openai.md).
 */
import { Type, type PluginManifest } from '../../sdk/index.js';

const manifest = {
  id: 'openai-api',
  version: '1.0.0',
  kind: 'channel',
  description:
    'An OpenAI-compatible API on the gateway: POST /v1/chat/completions (streamed or not) and GET /v1/models, where the model is the Keel agent with its skills and memory.',
  // channel:openai-api: the agent answers a request's action through it (reply, progress) like any chat channel.
  // gateway:routes:openai-api: the /v1 routes, which the gateway serves behind its key (sdk/gateway.ts).
  provides: ['channel:openai-api', 'gateway:routes:openai-api'],
  channel: { name: 'openai-api', userIdPattern: '^[A-Za-z0-9_.:@-]{1,64}$', userIdExample: 'operator' },
  config: {
    openaiApiTimeoutSeconds: {
      schema: Type.Integer({ minimum: 1, maximum: 86_400 }),
      default: 600,
      env: ['KEEL_OPENAI_API_TIMEOUT_SECONDS'],
      policy: 'SAFE',
      description:
        'How long POST /v1/chat/completions waits for the agent (queue wait included) before it answers 504 and cancels the action.',
    },
  },
  permissions: {},
} as const satisfies PluginManifest;

export default manifest;
