/**
 * The scheduler: the agent's timed work (schedule_task, one-shot and cron) and its own periodic review (autonomy).
 */
import { Type, type PluginManifest } from '../../sdk/index.js';

const manifest = {
  id: 'scheduler',
  version: '1.0.0',
  kind: 'service',
  description:
    'Scheduled tasks (one-shot and cron, persisted in $KEEL_HOME/schedules.json) and autonomy mode (the agent periodically reviews its goals, memory and schedule).',
  permissions: { filesystem: ['$KEEL_HOME'] },
  config: {
    autonomyEnabled: {
      schema: Type.Boolean(),
      default: false,
      env: ['KEEL_AUTONOMY_ENABLED'],
      policy: 'APPROVAL',
      description:
        'Autonomy mode: every autonomyInterval ms the agent reviews its goals, memory and schedule and may queue its own work. APPROVAL per SPEC.',
    },
    autonomyInterval: {
      schema: Type.Integer({ minimum: 1000 }),
      default: 3_600_000,
      env: ['KEEL_AUTONOMY_INTERVAL'],
      policy: 'APPROVAL',
      description: 'Milliseconds between two autonomy reviews (default one hour, at least 1000). APPROVAL per SPEC.',
    },
    autonomyAllowedChannels: {
      schema: Type.Array(Type.String({ minLength: 1 })),
      default: [],
      env: ['KEEL_AUTONOMY_ALLOWED_CHANNELS'],
      policy: 'APPROVAL',
      description:
        'Channels (chatA, chatB, chatC, chatD, gateway-chat ...) the agent may send to on its own in autonomy mode; send_email is always exempt. ' +
        'APPROVAL because it widens where the agent speaks unasked: the agent may ask, a human decides.',
    },
  },
  skills: [
    {
      name: 'schedule_task',
      description:
        'Schedule a task for the agent: once at a time (`at`, ISO 8601), once after a delay (`delayMs`), or recurring (`cron`, 5 or 6 fields, seconds first when 6; optional IANA `timezone`). Give exactly one of at, delayMs, cron. The task runs with the rights of whoever scheduled it.',
      category: 'scheduling',
      parameters: Type.Object(
        {
          task: Type.String({ minLength: 1, maxLength: 10_000, description: 'What the agent should do when it fires' }),
          priority: Type.Optional(Type.Integer({ minimum: 1, maximum: 10, description: '1..10, higher runs first (default 5)' })),
          at: Type.Optional(Type.String({ minLength: 1, description: 'ISO 8601 time, e.g. 2030-01-31T09:00:00Z' })),
          delayMs: Type.Optional(Type.Number({ minimum: 0, maximum: 315_576_000_000, description: 'Milliseconds from now' })),
          cron: Type.Optional(Type.String({ minLength: 1, description: 'Cron expression (croner syntax), 5 or 6 fields' })),
          timezone: Type.Optional(
            Type.String({
              minLength: 1,
              description: 'IANA timezone of the cron expression, e.g. Europe/Berlin (default: the machine\u2019s)',
            }),
          ),
        },
        { additionalProperties: false },
      ),
    },
    {
      name: 'list_scheduled_tasks',
      description: 'List scheduled tasks with their id, kind, next run and task. Admins see all; others see their own.',
      category: 'scheduling',
      isParallelSafe: true,
      parameters: Type.Object({}, { additionalProperties: false }),
    },
    {
      name: 'cancel_scheduled_task',
      description: 'Cancel a scheduled task by id (from list_scheduled_tasks). Admins may cancel any; others their own.',
      category: 'scheduling',
      parameters: Type.Object({ id: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
