/**
 * Action timelines (docs/timelines.md): a bounded, persisted record per action built from the kernel's hooks,
 * served at `GET /api/tasks/:id` and printed by `keel trace`.
 */
import { Type, type PluginManifest } from '../../sdk/index.js';

const manifest = {
  id: 'timeline',
  version: '1.0.0',
  kind: 'service',
  description:
    'Action timelines: where each action came from, queued, started, model calls, skill calls, replies, retries and settled; and why inbound messages were ignored. `GET /api/tasks/:id`, `keel trace`.',
  permissions: { filesystem: ['$KEEL_HOME/timeline'] },
  provides: ['gateway:routes:timeline'],
  config: {
    timelineMaxEvents: {
      schema: Type.Integer({ minimum: 10, maximum: 10_000 }),
      default: 200,
      env: ['KEEL_TIMELINE_MAX_EVENTS'],
      policy: 'SAFE',
      description: 'Events kept per action timeline; beyond it the oldest (after where the action came from) are dropped and counted.',
    },
    timelineMaxActions: {
      schema: Type.Integer({ minimum: 10, maximum: 1_000_000 }),
      default: 1000,
      env: ['KEEL_TIMELINE_MAX_ACTIONS'],
      policy: 'SAFE',
      description: 'Action timelines kept (the oldest go first); as many records of ignored inbound messages are kept.',
    },
  },
  cli: [
    {
      name: 'trace <id>',
      description:
        'Print the timeline of an action, by action id or by the platform message id that started it (or why that message was ignored)',
      options: [{ flags: '--json', description: 'machine-readable output' }],
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
