/**
 * `GET /api/tasks/:id` (through the gateway's route extension, sdk/gateway.ts): the action with its timeline.
 */
import { Type, type GatewayRoute, type PluginContext } from '../../../sdk/index.js';
import type { TimelineStore } from './store.js';

const Event = Type.Object(
  {
    seq: Type.Integer(),
    at: Type.String({ format: 'date-time' }),
    type: Type.Union(
      ['received', 'queued', 'amended', 'started', 'model_call', 'skill_call', 'reply', 'retry', 'settled'].map((t) => Type.Literal(t)),
    ),
    data: Type.Object({}, { additionalProperties: true }),
  },
  { description: 'One timeline entry; data depends on type (docs/timelines.md).' },
);

const TaskWithTimeline = Type.Object({
  action: Type.Object(
    { id: Type.String(), task: Type.String(), status: Type.String(), source: Type.String(), createdAt: Type.String() },
    {
      additionalProperties: true,
      description: 'The action as the queue keeps it (SPEC "Action"); when the queue no longer keeps it, the summary the timeline kept.',
    },
  ),
  timeline: Type.Object({
    events: Type.Array(Event),
    dropped: Type.Integer({ description: 'Events dropped by the per-action bound (timelineMaxEvents).' }),
  }),
});

const ErrorBody = Type.Object({ error: Type.String(), message: Type.String() });

export function taskRoute(ctx: PluginContext, store: () => TimelineStore | undefined): GatewayRoute {
  return {
    method: 'GET',
    url: '/api/tasks/:id',
    summary: 'One action with its timeline',
    description:
      'The action (pending, executing, completed or failed) and its bounded timeline: where it came from, queued, started, model calls, skill calls, replies, retries, settled. 404 when neither the queue nor the timeline knows the id.',
    schema: {
      params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) }),
      response: { 200: TaskWithTimeline, 404: ErrorBody },
    },
    handler: ({ params }) => {
      const id = params.id!;
      const live = ctx.queue.get(id);
      const t = store()?.get(id);
      if (!live && !t)
        return {
          status: 404,
          body: { error: 'Not Found', message: `No action has the id "${id}" (the queue and the timelines keep only recent actions).` },
        };
      return { body: { action: live ?? t!.action, timeline: { events: t?.events ?? [], dropped: t?.dropped ?? 0 } } };
    },
  };
}
