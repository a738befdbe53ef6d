/**
 * `keel ui`: an interactive terminal view over the gateway's REST + WebSocket API (overview, queue, live activity,
 * chat) that also manages the local model runner (providerG). It contributes a command only: no setup work.
 */
import type { PluginManifest } from '../../sdk/index.js';

const manifest = {
  id: 'ui',
  version: '1.0.0',
  kind: 'service',
  description: 'Interactive terminal UI (`keel ui`): overview, queue, live activity, chat, and the local model runner (providerG).',
  // The command connects to this home's own gateway as the local operator, so it reads the gateway key.
  permissions: { network: true, secrets: ['gatewayApiKey'] },
  cli: [
    {
      name: 'ui',
      description: 'Interactive terminal UI: overview, queue, live activity, chat with the agent, local models (providerG)',
      options: [
        { flags: '--url <url>', description: 'gateway to connect to (default http://127.0.0.1:<gatewayPort>)' },
        { flags: '-k, --api-key <key>', description: 'gateway key (default: gatewayApiKey of this home)' },
        { flags: '--runner-url <url>', description: 'local model runner (default: providerGApiUrl)' },
      ],
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
