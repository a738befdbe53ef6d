/**
 * Memory: short memory, episodic summaries, the long-term markdown files, vector/keyword recall, daily logs and
 * chatB contact profiles (SPEC "Memory entry", "Memory kinds", "Memory files", "Memory and learning").
 */
import { Type, type PluginManifest } from '../../sdk/index.js';

const manifest = {
  id: 'memory',
  version: '1.0.0',
  kind: 'skill',
  description: 'Memory: short and episodic memory, USER.md / LEARNING.md / JOURNAL.md, recall, daily logs and contact profiles.',
  provides: ['memory'],
  permissions: { filesystem: ['$KEEL_HOME'] },
  config: {
    memoryContextLimit: {
      schema: Type.Integer({ minimum: 1, maximum: 1000 }),
      default: 50,
      env: ['KEEL_MEMORY_CONTEXT_LIMIT'],
      policy: 'SAFE',
      description: 'How many of the newest short memories and episodic summaries of the session go into the agent context (SPEC: 50).',
    },
    memoryEpisodicLimit: {
      schema: Type.Integer({ minimum: 1, maximum: 100_000 }),
      default: 200,
      env: ['KEEL_MEMORY_EPISODIC_LIMIT'],
      // APPROVAL: lowering it drops the oldest summaries at once and for good, which a human should agree to.
      policy: 'APPROVAL',
      description: 'How many episodic summaries are kept in all; the oldest are dropped first (SPEC: 200). Lowering it deletes summaries.',
    },
    memoryConsolidationThreshold: {
      schema: Type.Integer({ minimum: 2, maximum: 10_000 }),
      default: 30,
      env: ['KEEL_MEMORY_CONSOLIDATION_THRESHOLD'],
      policy: 'SAFE',
      description: 'When a session holds this many short memories they are consolidated into one episodic summary (SPEC: 30).',
    },
    memorySessionIdleHours: {
      schema: Type.Integer({ minimum: 0, maximum: 8760 }),
      default: 24,
      env: ['KEEL_MEMORY_SESSION_IDLE_HOURS'],
      policy: 'SAFE',
      description:
        'A session whose newest short memory is older than this many hours has its short memories consolidated into an episodic summary, as a full session does (checked hourly); 0 never.',
    },
  },
  skills: [
    {
      name: 'recall_memory',
      description:
        'Search short, episodic and long memory for a natural-language query. Vector similarity when embeddings are available, otherwise keyword search ranked by recency. Each line shows timestamp, kind, source channel and relevance score.',
      category: 'memory',
      parameters: Type.Object(
        {
          query: Type.String({ minLength: 1, description: 'What to look for, in natural language' }),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10, description: 'Most results (default 10)' })),
        },
        { additionalProperties: false },
      ),
      isDeep: false,
      isParallelSafe: true,
    },
    {
      name: 'update_user_profile',
      description:
        'Add a factual, concise item to the user profile (USER.md), under Core Identity, Preferences or Constraints. Never passwords or secrets.',
      category: 'memory',
      parameters: Type.Object(
        { info_text: Type.String({ minLength: 1, maxLength: 2000, description: 'A factual, concise statement about the user' }) },
        { additionalProperties: false },
      ),
      isDeep: false,
      isDangerous: false,
    },
    {
      name: 'update_learning',
      description:
        'Distil facts about a topic into LEARNING.md. Give knowledge_content to learn from it (at most 3000 characters are read); without it the topic is researched (web search or the model).',
      category: 'memory',
      parameters: Type.Object(
        {
          topic: Type.String({ minLength: 1, maxLength: 200, description: 'Topic name (the ## section)' }),
          knowledge_content: Type.Optional(Type.String({ description: 'Source text to learn from' })),
        },
        { additionalProperties: false },
      ),
      isDeep: true,
      isResearch: false,
    },
    {
      name: 'update_journal',
      description: "Write an entry in the agent's journal (JOURNAL.md), under today's date.",
      category: 'memory',
      parameters: Type.Object(
        { entry_text: Type.String({ minLength: 1, maxLength: 20_000, description: 'The journal entry' }) },
        { additionalProperties: false },
      ),
      isDeep: false,
    },
  ],
  cli: [
    {
      name: 'reset',
      description: 'Clear memory (keeps config, queue and knowledge)',
      options: [
        {
          flags: '--memory',
          description: 'clear short and episodic memory, USER.md, LEARNING.md, JOURNAL.md, daily logs and contact profiles',
        },
        { flags: '-y, --yes', description: 'do not ask for confirmation' },
      ],
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
