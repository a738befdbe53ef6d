/**
 * The doctor: system_check (a skill) and `keel doctor` (a CLI command) report the health of the kernel, plugins,
 * disk, configuration and connections, and the risky settings, each with the command that fixes it.
 */
import { Type, type PluginManifest } from '../../sdk/index.js';

const manifest = {
  id: 'doctor',
  version: '1.0.0',
  kind: 'service',
  description:
    'Diagnostics: system_check and `keel doctor` report kernel, plugins, disk, config, connections, recent errors and risky settings with fixes.',
  // gatewayApiKey is only checked for presence, never printed.
  permissions: { filesystem: ['$KEEL_HOME'], secrets: ['gatewayApiKey', 'queueRedisUrl', 'queueRedisSigningKey'] },
  skills: [
    {
      name: 'system_check',
      description:
        'Health report: kernel (version, uptime, agent), plugins (failed, quarantined), disk space, configuration problems, channel connections, recent errors, and risky security settings, each finding with the command that fixes it.',
      category: 'system',
      adminOnly: true,
      isParallelSafe: true,
      parameters: Type.Object(
        {
          probeModel: Type.Optional(
            Type.Boolean({
              description:
                'Also make one short real call to the model the agent uses (no fallback; costs a few tokens) and report whether the key and the model work, and what to change when not.',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    },
  ],
  cli: [
    {
      name: 'doctor',
      description: 'Check this Keel installation and warn about risky settings (exit code 1 when something is wrong)',
      options: [
        { flags: '--json', description: 'print the report as JSON' },
        {
          flags: '--probe',
          description: 'also call the configured model once (a few tokens) to check that its key and name work',
        },
      ],
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
