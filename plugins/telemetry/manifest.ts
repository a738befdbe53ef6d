/**
 * Anonymous usage ping (SPEC Security keys, "Telemetry"): version, installation id, uptime, error counts.
 */
import { Type, type PluginManifest } from '../../sdk/index.js';

const manifest = {
  id: 'telemetry',
  version: '1.0.0',
  kind: 'service',
  description:
    'Anonymous usage ping: at start and every 24 h a POST of {version, installationId, uptimeSeconds, errorCounts} and nothing else. Turn off with usagePingEnabled false.',
  permissions: { network: true, filesystem: ['$KEEL_HOME/installation-id'] },
  config: {
    usagePingEnabled: {
      schema: Type.Boolean(),
      default: true,
      env: ['KEEL_USAGE_PING_ENABLED'],
      policy: 'LOCKED',
      description:
        'Send the anonymous usage ping (see docs/telemetry.md for exactly what is sent). LOCKED: only a person decides what leaves the machine.',
    },
    usagePingUrl: {
      schema: Type.String(),
      default: '',
      env: ['KEEL_USAGE_PING_URL'],
      policy: 'LOCKED',
      description: 'Where the ping is POSTed; empty means the default service. LOCKED: the agent must not redirect it.',
    },
    usagePingTimeoutMs: {
      schema: Type.Integer({ minimum: 100, maximum: 120_000 }),
      default: 4000,
      env: ['KEEL_USAGE_PING_TIMEOUT_MS'],
      policy: 'SAFE',
      description: 'Milliseconds before a ping that got no answer is abandoned (silently). SAFE: a diagnostic setting.',
    },
    usagePingToken: {
      schema: Type.String(),
      default: '',
      env: ['KEEL_USAGE_PING_TOKEN'],
      policy: 'LOCKED',
      secret: true,
      description: 'Optional bearer token sent as Authorization: Bearer <token> (default empty: no header). Secret.',
    },
  },
} as const satisfies PluginManifest;

export default manifest;
