/**
 * TypeBox schemas of every REST request and response (SPEC "Gateway REST", "Resources and their fields").
 * Fastify validates requests with them, serialises responses with them, and /api/openapi.json is built from them.
 */
import { Type, type TSchema } from '../../../../sdk/index.js';

/** Every error the gateway sends: `{error, message}` (401 included, as SPEC words it). */
export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: 'HTTP reason phrase, e.g. "Bad Request", "Not Found", "Unauthorized".' }),
    message: Type.String({ description: 'What went wrong and what to do about it.' }),
    code: Type.Optional(Type.String({ description: 'The Keel error code (KEEL_E_*) when the error came from a skill call.' })),
  },
  { additionalProperties: false },
);

export const AgentStatus = Type.Object(
  {
    running: Type.Boolean(),
    model: Type.String(),
    provider: Type.String(),
    memory: Type.Object({ short: Type.Integer(), episodic: Type.Integer(), long: Type.Integer() }),
    queue: Type.Object({ pending: Type.Integer(), failed: Type.Integer() }),
    autonomy: Type.Object({ enabled: Type.Boolean(), interval: Type.Integer({ description: 'milliseconds' }) }),
    safeMode: Type.Boolean(),
    version: Type.String(),
  },
  { description: 'SPEC "Agent status object".' },
);

export const SkillDescriptor = Type.Object({
  name: Type.String(),
  description: Type.String({
    description:
      'Text, then the four skill flags with their values, e.g. "[isDeep: true, isResearch: false, isParallelSafe: true, isDangerous: false]", and "adminOnly: true" when set.',
  }),
  category: Type.String(),
  parameters: Type.Array(Type.String(), { description: 'Parameter names.' }),
  needs: Type.Optional(
    Type.String({
      description:
        'Only on a skill that cannot work yet: what it needs, e.g. "needs searchAApiKey or searchBApiKey". The agent is not offered it until then; running it explains.',
    }),
  ),
});
export const SkillList = Type.Object({ skills: Type.Array(SkillDescriptor) });

export const SkillName = Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }) });
export const ExecuteBody = Type.Object(
  { parameters: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'Arguments of the skill (default {}).' })) },
  { additionalProperties: false },
);
export const ExecuteResult = Type.Object({
  success: Type.Boolean(),
  result: Type.String({ description: 'The skill result as text (objects JSON-serialised), or the failure message.' }),
  executionTime: Type.Integer({ minimum: 0, description: 'Whole milliseconds (SPEC).' }),
  code: Type.Optional(
    Type.String({
      description: 'When success is false: the error code, KEEL_E_SKILL_FAILED or the code the skill raised (e.g. KEEL_E_WEB_BLOCKED).',
    }),
  ),
  plugin: Type.Optional(
    Type.String({
      description: "When the skill failed: the id of the plugin whose error it was (the skill's, or the channel's it sent through).",
    }),
  ),
});

export const TaskBody = Type.Object(
  {
    task: Type.String({ minLength: 1, description: 'Free-text instruction (not blank).' }),
    priority: Type.Optional(Type.Integer({ description: 'An integer, default 5; clamped to 1..10 (a fraction is refused).' })),
  },
  { additionalProperties: false },
);
export const TaskAccepted = Type.Object({
  success: Type.Boolean(),
  taskId: Type.String(),
  message: Type.String({ description: 'States the queued priority (after clamping).' }),
});

const Metadata = Type.Object(
  {
    retries: Type.Integer(),
    maxRetries: Type.Integer(),
    ttl: Type.Integer({ description: 'milliseconds' }),
  },
  { additionalProperties: true },
);
export const Action = Type.Object({
  id: Type.String(),
  task: Type.String(),
  priority: Type.Integer(),
  status: Type.String(),
  createdAt: Type.String(),
  source: Type.String(),
  metadata: Metadata,
  result: Type.Optional(Type.String()),
  error: Type.Optional(Type.String()),
  settledAt: Type.Optional(Type.String()),
});
export const TaskLists = Type.Object({
  pending: Type.Array(Action),
  completed: Type.Array(Action),
  failed: Type.Array(Action),
});

export const ConfigMap = Type.Object({}, { additionalProperties: true, description: 'Flat key -> effective value; secret values masked.' });
export const ConfigKey = Type.Object({ key: Type.String({ minLength: 1, maxLength: 200 }) });
export const ConfigBody = Type.Object(
  { value: Type.Unknown({ description: 'Any JSON value; checked against the key schema.' }) },
  { additionalProperties: false },
);
export const ConfigChanged = Type.Object({
  success: Type.Boolean(),
  key: Type.String(),
  value: Type.Unknown({ description: 'The new effective value (masked when the key is secret).' }),
  message: Type.String(),
});

export const MemoryQuery = Type.Object(
  {
    type: Type.Optional(Type.Union([Type.Literal('short'), Type.Literal('episodic'), Type.Literal('long')])),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 50 })),
    search: Type.Optional(Type.String({ maxLength: 1000 })),
  },
  { additionalProperties: false },
);
export const MemoryEntry = Type.Object({
  id: Type.String(),
  type: Type.String(),
  content: Type.String(),
  timestamp: Type.String(),
  metadata: Type.Object({}, { additionalProperties: true }),
});
export const MemoryList = Type.Object({ memories: Type.Array(MemoryEntry), total: Type.Integer() });

export const ConnectionStatus = Type.Object({
  enabled: Type.Boolean(),
  connected: Type.Boolean(),
  botUsername: Type.Optional(Type.String({ description: 'chatA only' })),
  botId: Type.Optional(Type.Integer({ description: 'chatA only' })),
  guilds: Type.Optional(Type.Integer({ description: 'chatC only' })),
  state: Type.Optional(
    Type.Union(
      [
        Type.Literal('connecting'),
        Type.Literal('connected'),
        Type.Literal('reconnecting'),
        Type.Literal('stopped'),
        Type.Literal('failed'),
      ],
      {
        description: 'Keel extra: the connection supervisor state',
      },
    ),
  ),
  lastInboundAt: Type.Optional(Type.String({ description: 'Keel extra: ISO time of the last inbound message' })),
  reconnects: Type.Optional(Type.Integer({ description: 'Keel extra: reconnections since start' })),
  lastError: Type.Optional(Type.String({ description: 'Keel extra: the last connection error' })),
  lastCatchUpAt: Type.Optional(
    Type.String({ description: 'Keel extra, chatC and chatD: ISO time the last catch-up from the history ended' }),
  ),
  caughtUp: Type.Optional(
    Type.Integer({
      description: 'Keel extra, chatC and chatD: messages read from the history that the connection had not brought, since start',
    }),
  ),
});
export const Connections = Type.Record(Type.String(), ConnectionStatus, {
  description: 'Keyed by channel name; every running channel plugin (built-in or a user plugin providing channel:<name>).',
});

const Level = Type.Union([Type.Literal('info'), Type.Literal('warn'), Type.Literal('error')]);
export const LogQuery = Type.Object(
  {
    level: Type.Optional(Level),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10000, default: 100 })),
  },
  { additionalProperties: false },
);
export const LogList = Type.Object({
  logs: Type.Array(Type.Object({ level: Type.String(), message: Type.String(), timestamp: Type.String() })),
});

export const SecuritySettings = Type.Object({
  safeMode: Type.Boolean(),
  apiKeySet: Type.Boolean(),
  adminUsers: Type.Array(Type.String(), { description: '"<channel>:<user id>" strings, e.g. "chatA:123456".' }),
  pluginAllowList: Type.Array(Type.String()),
  pluginDenyList: Type.Array(Type.String()),
});
export const SecurityBody = Type.Object(
  {
    safeMode: Type.Optional(Type.Boolean()),
    adminUsers: Type.Optional(
      Type.Union([
        Type.Object({}, { additionalProperties: Type.Array(Type.String()), description: 'Object form: channel -> user ids.' }),
        Type.Array(Type.String({ pattern: '^[^:]+:.+$' }), { description: '"<channel>:<user id>" strings, as GET returns them.' }),
      ]),
    ),
    pluginAllowList: Type.Optional(Type.Array(Type.String())),
    pluginDenyList: Type.Optional(Type.Array(Type.String())),
  },
  { additionalProperties: false, minProperties: 1 },
);
export const OpenApiDoc = Type.Object({ openapi: Type.String() }, { additionalProperties: true, description: 'An OpenAPI 3.1 document.' });
export const Done = Type.Object({ success: Type.Boolean(), message: Type.String() });

/** Error responses a route documents, by status. */
export function errors(...codes: number[]): Record<number, TSchema> {
  const out: Record<number, TSchema> = {};
  for (const c of codes) out[c] = ErrorBody;
  return out;
}
