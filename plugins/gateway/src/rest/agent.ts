/**
 * Status, skills and tasks: GET /api/status, GET /api/skills, POST /api/skills/:name/execute, POST|GET /api/tasks.
 */
import type { Actor, SkillManifest } from '../../../../sdk/index.js';
import { sendError, statusForCode } from '../errors.js';
import { agentStatus } from '../status.js';
import type { RouteDef, RouteEnv } from './route.js';
import * as S from './schemas.js';

/** SPEC's four skill flags: each appears in the description with its value, true or false. */
const FLAGS = ['isDeep', 'isResearch', 'isParallelSafe', 'isDangerous'] as const;

/**
 * A manifest entry as SPEC's skill descriptor: the description ends with all four flags and their values
 * (`[isDeep: false, isResearch: false, isParallelSafe: true, isDangerous: false]`), then `adminOnly: true` when set.
 */
export function describeSkill(m: SkillManifest & { unavailable?: string }): {
  name: string;
  description: string;
  category: string;
  parameters: string[];
  needs?: string;
} {
  const flags = FLAGS.map((f) => `${f}: ${m[f] === true}`);
  if (m.adminOnly === true) flags.push('adminOnly: true');
  const props = (m.parameters as { properties?: Record<string, unknown> } | undefined)?.properties;
  return {
    name: m.name,
    description: flags.length ? `${m.description} [${flags.join(', ')}]` : m.description,
    category: m.category,
    parameters: props && typeof props === 'object' ? Object.keys(props) : [],
    ...(m.unavailable !== undefined ? { needs: m.unavailable } : {}),
  };
}

export function agentRoutes(env: RouteEnv): RouteDef[] {
  const { ctx } = env;
  const actor = (loopback: boolean): Actor => ({ kind: 'operator', channel: 'gateway', loopback });
  return [
    {
      method: 'GET',
      url: '/api/status',
      summary: 'The agent status object',
      schema: { response: { 200: S.AgentStatus, ...S.errors(401) } },
      handler: () => agentStatus(env),
    },
    {
      method: 'GET',
      url: '/api/skills',
      summary: 'Every skill; one that cannot work yet (a key is missing) says what it needs',
      schema: { response: { 200: S.SkillList, ...S.errors(401) } },
      handler: () => ({ skills: ctx.skills.list({ includeUnavailable: true }).map(describeSkill) }),
    },
    {
      method: 'POST',
      url: '/api/skills/:name/execute',
      summary: 'Run one skill now',
      description:
        '200 with success true, or success false when the skill itself failed (its message in result, its KEEL_E_* code in code, the id of the plugin whose error it was in plugin). 404 unknown skill, 400 arguments ' +
        'that fail the skill schema, 403 refused by policy (safe mode, admin rule, a hook), 503 skill declared but its plugin is not running. ' +
        'executionTime is a whole number of milliseconds.',
      schema: {
        params: S.SkillName,
        body: S.ExecuteBody,
        response: { 200: S.ExecuteResult, ...S.errors(400, 401, 403, 404, 413, 415, 503) },
      },
      handler: async (req, reply) => {
        const { name } = req.params as { name: string };
        const { parameters } = (req.body ?? {}) as { parameters?: Record<string, unknown> };
        const r = await ctx.skills.execute(name, parameters ?? {}, actor(env.isLoopback(req)));
        if (!r.success && r.code) {
          const status = statusForCode(r.code);
          // A code from the dispatcher's checks is the caller's problem; a failure inside the skill is a result.
          if (status && r.code !== 'KEEL_E_SKILL_FAILED') return sendError(reply, status, r.result, r.code);
        }
        // A failure inside the skill keeps its own code (KEEL_E_WEB_BLOCKED, ...), so a client can tell them apart.
        return {
          success: r.success,
          result: r.result,
          executionTime: r.executionTime,
          ...(!r.success && r.code ? { code: r.code } : {}),
          ...(!r.success && r.plugin ? { plugin: r.plugin } : {}),
        };
      },
    },
    {
      method: 'POST',
      url: '/api/tasks',
      summary: 'Queue a task',
      description:
        '201 with the new action id; the message states the queued priority after clamping to 1..10. A blank task is 400. ' +
        'With an Idempotency-Key header (1 to 200 visible characters), a request retried with the same key within 24 hours ' +
        "answers with the first request's action (header Idempotent-Replayed: true) instead of queueing a second one.",
      schema: { body: S.TaskBody, response: { 201: S.TaskAccepted, ...S.errors(400, 401, 413, 415, 503) } },
      handler: async (req, reply) => {
        const body = req.body as { task: string; priority?: number };
        const before = Date.now();
        const raw = req.headers['idempotency-key'];
        if (raw !== undefined && (typeof raw !== 'string' || !/^[\x21-\x7e]{1,200}$/.test(raw)))
          return sendError(
            reply,
            400,
            'The Idempotency-Key header must be 1 to 200 visible ASCII characters (no spaces), sent once: a UUID is a good key.',
          );
        const a = await ctx.queue.push(
          {
            task: body.task,
            ...(body.priority !== undefined ? { priority: body.priority } : {}),
            source: 'gateway',
            actor: actor(env.isLoopback(req)),
          },
          ...(raw !== undefined ? [{ idempotencyKey: raw }] : []),
        );
        if (raw !== undefined && Date.parse(a.createdAt) < before) {
          reply.header('idempotent-replayed', 'true');
        }
        const asked = body.priority;
        const note = asked === undefined ? ' (the default)' : asked !== a.priority ? ` (asked ${asked}; priorities run from 1 to 10)` : '';
        reply.code(201);
        return { success: true, taskId: a.id, message: `Task queued with priority ${a.priority}${note}.` };
      },
    },
    {
      method: 'GET',
      url: '/api/tasks',
      summary: 'Pending, completed and failed actions',
      schema: { response: { 200: S.TaskLists, ...S.errors(401) } },
      handler: () => ctx.queue.list(),
    },
  ];
}
