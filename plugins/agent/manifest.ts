/**
 * The agent plugin: the reasoning loop (capability `agent`), the model router (capability `llm`) and the
 * `deep_reason` skill. It owns the "Models and providers" routing keys and the "Agent behaviour" keys of the loop.
 */
import { Type, type PluginManifest } from '../../sdk/index.js';
import { PROVIDER_IDS } from './src/infer.js';

const ProviderIdSchema = Type.Union([
  Type.Union(PROVIDER_IDS.map((id) => Type.Literal(id))),
  // A user plugin may bring its own provider as capability `provider:<id>` (tests use `fake`). Lowercase only,
  // and not "provider...", so a misspelt providerX is still refused.
  Type.String({
    pattern: '^(?!provider)[a-z][a-z0-9-]{0,40}$',
    title: 'the id of a provider plugin: a lowercase letter, then up to 40 lowercase letters, digits or "-" (not starting with "provider")',
  }),
]);
const ModelMap = Type.Record(Type.String({ minLength: 1 }), Type.String({ minLength: 1 }));

const manifest = {
  id: 'agent',
  version: '1.0.0',
  kind: 'service',
  description:
    'The agent: reasons with a model, calls skills, observes results and answers; routes model calls between providers (inference, fallback, token usage).',
  provides: ['agent', 'agent:inbox', 'llm'],
  permissions: { filesystem: ['$KEEL_HOME'] },
  config: {
    llmProvider: {
      schema: ProviderIdSchema,
      env: ['KEEL_LLM_PROVIDER'],
      policy: 'SAFE',
      description:
        'Provider for the agent: providerA ... providerK (the spec lists A..G; H..K are the further hosted providers), or the id of a user plugin that provides "provider:<id>". ' +
        'May be omitted: the provider is then inferred from the modelName prefix (see docs/agent.md).',
    },
    modelName: {
      schema: Type.String({ minLength: 1 }),
      env: ['KEEL_MODEL_NAME'],
      policy: 'SAFE',
      description: 'Primary model. No default (every name belongs to a vendor). Without llmProvider its prefix decides the provider.',
    },
    providerModelNames: {
      schema: ModelMap,
      default: {},
      policy: 'SAFE',
      description:
        'Provider to last-used model; the agent records it itself after a successful call, and restores it when llmProvider is switched to a provider modelName does not belong to. Also names the model of each alternative provider for fallback.',
    },
    fallbackModelNames: {
      schema: ModelMap,
      default: {},
      policy: 'SAFE',
      description:
        'Provider to fallback model, tried on the same provider when its primary model fails. SAFE like modelName: it only chooses among models the configured keys already reach.',
    },
    fastModelName: {
      schema: Type.String({ minLength: 1 }),
      env: ['KEEL_FAST_MODEL_NAME'],
      policy: 'SAFE',
      description: 'Model for lightweight work (summaries, classification). Default: the primary model. SAFE like modelName.',
    },
    maxStepsPerAction: {
      schema: Type.Integer({ minimum: 1, maximum: 200 }),
      default: 10,
      env: ['KEEL_MAX_STEPS_PER_ACTION'],
      policy: 'SAFE',
      description: 'Most model calls (steps) the agent makes for one action; reaching it without a final answer fails the action.',
    },
    llmTimeoutMs: {
      schema: Type.Integer({ minimum: 1000 }),
      default: 120_000,
      env: ['KEEL_LLM_TIMEOUT_MS'],
      policy: 'SAFE',
      description:
        'Timeout of one model call in milliseconds (after it the fallback chain continues). SAFE: it cannot widen what the agent may do.',
    },
    progressFeedbackEnabled: {
      schema: Type.Boolean(),
      default: true,
      env: ['KEEL_PROGRESS_FEEDBACK_ENABLED'],
      policy: 'SAFE',
      description:
        "Send progress (the agent's reasoning between tool calls) to the channel an action came from, through its channel capability (progress).",
    },
    progressFeedbackTypingOnly: {
      schema: Type.Boolean(),
      default: false,
      env: ['KEEL_PROGRESS_FEEDBACK_TYPING_ONLY'],
      policy: 'SAFE',
      description: 'Progress feedback shows only a typing indicator, no text. SAFE like progressFeedbackEnabled.',
    },
    skillRoutingRules: {
      schema: Type.Array(
        Type.Object(
          {
            match: Type.String({ minLength: 1 }),
            include: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
            exclude: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
          },
          { additionalProperties: false },
        ),
      ),
      default: [],
      policy: 'APPROVAL',
      description:
        'Rules for skill selection: when "match" (a case-insensitive regular expression) matches the task, the "include" skills are offered to the model and the "exclude" skills are not.',
    },
    tokenUsagePath: {
      schema: Type.String({ minLength: 1 }),
      default: '$KEEL_HOME/token-usage-summary.json',
      env: ['KEEL_TOKEN_USAGE_PATH'],
      policy: 'APPROVAL',
      description:
        'Token usage summary per provider and model (JSON, replaced atomically). APPROVAL: the agent writes this file, so moving it must not let it overwrite other files.',
    },
    tokenLogPath: {
      schema: Type.String({ minLength: 1 }),
      default: '$KEEL_HOME/token-usage.log',
      env: ['KEEL_TOKEN_LOG_PATH'],
      policy: 'APPROVAL',
      description: 'Token usage log: one JSON line per model call. APPROVAL for the same reason as tokenUsagePath.',
    },
  },
  skills: [
    {
      name: 'deep_reason',
      description: 'Think a question through step by step and return the analysis with a conclusion.',
      category: 'reasoning',
      parameters: Type.Object(
        { topic: Type.String({ minLength: 1, description: 'The question or topic to reason about.' }) },
        { additionalProperties: false },
      ),
      isDeep: true,
      isResearch: false,
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
