/**
 * The dashboard: the operator's web page, served by the gateway at `/` (docs/dashboard.md).
 */
import type { PluginManifest } from '../../sdk/index.js';

const manifest = {
  id: 'dashboard',
  version: '1.0.0',
  kind: 'service',
  description:
    'Web dashboard served by the gateway at / (unless --static / gatewayStaticDir names another folder): overview, tasks, live activity, chat, skills, memory, knowledge, configuration, security, connections, logs, plugins.',
  // dashboard: where the built files are; the gateway serves them. Put "dashboard" in pluginDenyList to remove it.
  provides: ['dashboard'],
  // Reads only its own built files in this installation's dist/dashboard.
  permissions: {},
} as const satisfies PluginManifest;

export default manifest;
