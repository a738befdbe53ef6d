/**
 * What an operator console (the dashboard) needs beyond SPEC's endpoints: configuration keys with their metadata,
 * pending approvals, cancelling a task, one skill's schema, plugin states and lifting a quarantine.
 * Changes follow the same rule as PUT /api/config/:key: without an API key, only loopback clients may make them
 * where a LOCKED key or a plugin's trust is concerned.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errorCodeOf, errorMessage, Type } from '../../../../sdk/index.js';
import { sendError, statusForCode } from '../errors.js';
import type { RouteDef, RouteEnv } from './route.js';
import * as S from './schemas.js';

const Id = Type.Object({ id: Type.String({ minLength: 1, maxLength: 200 }) });
const KeyInfo = Type.Object({
  key: Type.String(),
  owner: Type.String(),
  policy: Type.String(),
  secret: Type.Boolean(),
  description: Type.Optional(Type.String()),
  type: Type.Optional(Type.String()),
  default: Type.Optional(Type.Unknown()),
  source: Type.Optional(Type.String({ description: 'default, file, env or override' })),
  value: Type.Optional(Type.Unknown({ description: 'Effective value, masked when secret.' })),
});
const Pending = Type.Object(
  { id: Type.String(), key: Type.String(), value: Type.Unknown(), reason: Type.Optional(Type.String()), requestedAt: Type.String() },
  { additionalProperties: true },
);
const Outcome = Type.Object({ success: Type.Boolean(), message: Type.String() }, { additionalProperties: true });
const SkillDetail = Type.Object(
  {
    name: Type.String(),
    description: Type.String(),
    category: Type.String(),
    plugin: Type.String(),
    parameters: Type.Object({}, { additionalProperties: true, description: 'JSON schema of the arguments.' }),
    isDeep: Type.Boolean(),
    isResearch: Type.Boolean(),
    isParallelSafe: Type.Boolean(),
    isDangerous: Type.Boolean(),
    adminOnly: Type.Boolean(),
    available: Type.Boolean({ description: 'Whether the skill can work now (false: see needs).' }),
    needs: Type.Optional(Type.String({ description: 'When not available: what it needs, e.g. "needs searchAApiKey or searchBApiKey".' })),
  },
  { additionalProperties: false },
);
const PluginList = Type.Object({
  plugins: Type.Array(
    Type.Object({ id: Type.String(), state: Type.String(), reason: Type.Optional(Type.String()), kind: Type.Optional(Type.String()) }),
  ),
});

export function consoleRoutes(env: RouteEnv): RouteDef[] {
  const { ctx, info, settings } = env;
  const refusedRemote = (req: FastifyRequest, reply: FastifyReply, what: string): boolean => {
    if (settings.apiKey || env.isLoopback(req)) return false;
    sendError(
      reply,
      403,
      `${what} only from this machine (loopback) while the gateway has no API key. Set gatewayApiKey to do it remotely.`,
    );
    return true;
  };
  const origin = { kind: 'operator' as const, reason: 'via the gateway' };
  const fail = (reply: FastifyReply, e: unknown) => sendError(reply, statusForCode(errorCodeOf(e)) ?? 400, errorMessage(e));

  return [
    {
      method: 'GET',
      url: '/api/config/keys',
      summary: 'Every configuration key with its type, default, source, policy class and effective value (secrets masked)',
      schema: { response: { 200: Type.Object({ keys: Type.Array(KeyInfo) }), ...S.errors(401) } },
      handler: () => {
        const values = ctx.config.all({ masked: true });
        return { keys: info.configKeys().map((k) => ({ ...k, ...(k.key in values ? { value: values[k.key] } : {}) })) };
      },
    },
    {
      method: 'GET',
      url: '/api/config/pending',
      summary: 'Changes the agent requested for APPROVAL keys, waiting for a human',
      schema: { response: { 200: Type.Object({ pending: Type.Array(Pending) }), ...S.errors(401) } },
      handler: () => ({ pending: ctx.config.pending() }),
    },
    {
      method: 'POST',
      url: '/api/config/pending/:id/approve',
      summary: 'Approve a pending change (as the operator)',
      description: '404 unknown id. 403 from a non-loopback client while the gateway has no API key.',
      schema: { params: Id, response: { 200: Outcome, ...S.errors(401, 403, 404) } },
      handler: async (req, reply) => {
        if (refusedRemote(req, reply, 'Approvals can be given')) return reply;
        const { id } = req.params as { id: string };
        try {
          const out = await ctx.config.approve(id, origin);
          return { success: out.status === 'applied', message: out.status === 'applied' ? `Approved: ${out.key} applied.` : out.message };
        } catch (e) {
          return fail(reply, e);
        }
      },
    },
    {
      method: 'POST',
      url: '/api/config/pending/:id/reject',
      summary: 'Reject a pending change (as the operator)',
      description: '404 unknown id. 403 from a non-loopback client while the gateway has no API key.',
      schema: { params: Id, response: { 200: Outcome, ...S.errors(401, 403, 404) } },
      handler: async (req, reply) => {
        if (refusedRemote(req, reply, 'Approvals can be refused')) return reply;
        const { id } = req.params as { id: string };
        try {
          const p = await ctx.config.reject(id, origin);
          return { success: true, message: `Rejected the change of ${p.key}.` };
        } catch (e) {
          return fail(reply, e);
        }
      },
    },
    {
      method: 'POST',
      url: '/api/tasks/:id/cancel',
      summary: 'Cancel a task: a pending one is removed, a running one is stopped',
      description:
        'outcome: removed (it was waiting), stopping (it runs, in this process or any other, and is being stopped: it ends failed with the reason, never retried), settled (already done) or unknown (404).',
      schema: {
        params: Id,
        response: { 200: Type.Object({ success: Type.Boolean(), outcome: Type.String(), message: Type.String() }), ...S.errors(401, 404) },
      },
      handler: async (req, reply) => {
        const { id } = req.params as { id: string };
        const outcome = await ctx.queue.cancel(id, 'cancelled by the operator (gateway)');
        if (outcome === 'unknown') return sendError(reply, 404, `No action has id ${id}.`);
        const message =
          outcome === 'removed'
            ? 'Removed from the queue.'
            : outcome === 'stopping'
              ? 'Stopping the running action: it ends failed with the reason and is not retried.'
              : 'It has already settled.';
        return { success: outcome === 'removed' || outcome === 'stopping', outcome, message };
      },
    },
    {
      method: 'GET',
      url: '/api/skills/:name',
      summary: 'One skill with its argument schema and flags',
      schema: { params: S.SkillName, response: { 200: SkillDetail, ...S.errors(401, 404) } },
      handler: (req, reply) => {
        const { name } = req.params as { name: string };
        const s = ctx.skills.list({ includeUnavailable: true }).find((x) => x.name === name);
        if (!s) return sendError(reply, 404, `Unknown skill "${name}". GET /api/skills lists them.`);
        return {
          name: s.name,
          description: s.description,
          category: s.category,
          plugin: s.plugin,
          parameters: JSON.parse(JSON.stringify(s.parameters ?? { type: 'object' })),
          isDeep: s.isDeep === true,
          isResearch: s.isResearch === true,
          isParallelSafe: s.isParallelSafe === true,
          isDangerous: s.isDangerous === true,
          adminOnly: s.adminOnly === true,
          available: s.unavailable === undefined,
          ...(s.unavailable !== undefined ? { needs: s.unavailable } : {}),
        };
      },
    },
    {
      method: 'GET',
      url: '/api/agent/readiness',
      summary: 'Whether the agent can take work now, and if not why (the reason queued actions wait)',
      schema: {
        response: {
          200: Type.Object({
            running: Type.Boolean(),
            ready: Type.Boolean(),
            reason: Type.Optional(Type.String()),
            current: Type.Optional(Type.String()),
          }),
          ...S.errors(401),
        },
      },
      handler: () => {
        const running = info.agentRunning();
        let ready = { ready: false, reason: 'no agent plugin is running in this process' } as { ready: boolean; reason?: string };
        try {
          const agent = ctx.use('agent');
          if (agent) ready = agent.ready();
        } catch (e) {
          ready = { ready: false, reason: errorMessage(e) };
        }
        if (!running) ready = { ready: false, reason: 'no agent is running on this home: start it with `keel run`' };
        const current = info.runner()?.current;
        return { running, ready: ready.ready, ...(ready.reason ? { reason: ready.reason } : {}), ...(current ? { current } : {}) };
      },
    },
    {
      method: 'POST',
      url: '/api/agent/probe',
      summary: 'Check the model the agent uses: one short real call, no fallback (costs a few tokens)',
      description:
        'Answers 200 either way: `ok` true with the provider, model, time and the first words of the reply, or `ok` false with the ' +
        "error (the provider's words, key-free), the HTTP status the provider gave, and what to change (`fix`). 503 when no agent " +
        'plugin runs in this process.',
      schema: {
        response: {
          200: Type.Object({
            ok: Type.Boolean(),
            provider: Type.Optional(Type.String()),
            model: Type.Optional(Type.String()),
            ms: Type.Optional(Type.Number()),
            reply: Type.Optional(Type.String()),
            status: Type.Optional(Type.Number()),
            error: Type.Optional(Type.String()),
            fix: Type.Optional(Type.String()),
          }),
          ...S.errors(401, 503),
        },
      },
      handler: async (_req, reply) => {
        const llm = ctx.use('llm');
        if (!llm?.probe) return sendError(reply, 503, 'No agent plugin runs in this process, so there is no model to check.');
        const stop = new AbortController();
        // the client went away: stop waiting for the model
        reply.raw.once('close', () => {
          if (!reply.raw.writableFinished) stop.abort(new Error('the client closed the request'));
        });
        return llm.probe({ signal: stop.signal });
      },
    },
    {
      method: 'GET',
      url: '/api/plugins',
      summary: "Every plugin's state (loaded, disabled, quarantined, failed, invalid)",
      schema: { response: { 200: PluginList, ...S.errors(401) } },
      handler: () => ({ plugins: info.plugins() }),
    },
    {
      method: 'POST',
      url: '/api/plugins/:id/enable',
      summary: "Lift a plugin's quarantine and start it again",
      description: '404 unknown plugin. 403 from a non-loopback client while the gateway has no API key.',
      schema: {
        params: Id,
        response: {
          200: Type.Object({ success: Type.Boolean(), state: Type.String(), message: Type.String() }),
          ...S.errors(401, 403, 404, 503),
        },
      },
      handler: async (req, reply) => {
        if (refusedRemote(req, reply, 'Plugins can be enabled')) return reply;
        const { id } = req.params as { id: string };
        if (!info.enablePlugin)
          return sendError(reply, 503, 'This kernel cannot enable plugins while it runs; use `keel plugins enable` and restart.');
        const st = await info.enablePlugin(id);
        if (!st) return sendError(reply, 404, `Unknown plugin "${id}".`);
        return {
          success: st.state === 'loaded',
          state: st.state,
          message: st.state === 'loaded' ? `${id} is loaded.` : `${id} is ${st.state}${st.reason ? `: ${st.reason}` : ''}.`,
        };
      },
    },
  ];
}
