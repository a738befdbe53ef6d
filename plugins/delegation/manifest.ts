/**
 * Delegation: the agent hands a sub-task to a child action in its own queue lane (delegate_task) or to a named sub-agent with a
 * task budget (spawn_agent). See docs/delegation.md.
 */
import { Type, type PluginManifest } from '../../sdk/index.js';

export const DEFAULT_MAX_STEPS = 5;
export const MAX_STEPS_CAP = 10;
export const DEFAULT_WAIT_MS = 120_000;
export const MAX_WAIT_MS = 600_000;
export const DEFAULT_MAX_TASKS = 5;
export const MAX_TASKS_CAP = 50;
/** Depth of a delegated task: the parent action is 0, its child 1, a grandchild 2; deeper is refused. */
export const MAX_DEPTH = 2;

const maxSteps = Type.Optional(
  Type.Integer({
    minimum: 1,
    maximum: MAX_STEPS_CAP,
    description: `Step budget of each sub-task run: model calls it may make (default ${DEFAULT_MAX_STEPS}, at most ${MAX_STEPS_CAP})`,
  }),
);
const waitMs = Type.Optional(
  Type.Integer({
    minimum: 1000,
    maximum: MAX_WAIT_MS,
    description: `How long to wait for the sub-task before it is cancelled (default ${DEFAULT_WAIT_MS} ms, at most ${MAX_WAIT_MS})`,
  }),
);
const agentName = Type.String({
  minLength: 1,
  maxLength: 40,
  pattern: '^[A-Za-z0-9][A-Za-z0-9_-]*$',
  description: 'Sub-agent name: letters, digits, _ and -',
});

const manifest = {
  id: 'delegation',
  version: '1.0.0',
  kind: 'skill',
  description:
    'Sub-agents: delegate_task runs a sub-task as a child action in its own queue lane with its own step budget and returns its answer to the calling action; spawn_agent creates a named sub-agent (instructions + task budget). Records in $KEEL_HOME/delegations.json.',
  permissions: { filesystem: ['$KEEL_HOME'] },
  skills: [
    {
      name: 'delegate_task',
      description:
        'Hand a self-contained sub-task to a sub-agent and wait for its answer, which comes back as this tool\u2019s result (taskId, status, result, steps). ' +
        'The sub-agent has the same tools and rights as you, a step budget (maxSteps), and no view of this conversation: put everything it needs into `task`. ' +
        'Give `agent` to run it as a sub-agent made with spawn_agent (counts against that agent\u2019s task budget). Nesting deeper than 2 levels is refused.',
      category: 'agents',
      adminOnly: true,
      parameters: Type.Object(
        {
          task: Type.String({ minLength: 1, maxLength: 10_000, description: 'The sub-task, complete in itself' }),
          agent: Type.Optional(agentName),
          maxSteps,
          waitMs,
        },
        { additionalProperties: false },
      ),
    },
    {
      name: 'spawn_agent',
      description:
        'Create a named sub-agent: standing instructions (a role, a way of working) and a task budget (maxTasks, default 5). ' +
        'Optional `tasks` run on it right away, one after another, and their answers come back as this tool\u2019s result; later tasks go through delegate_task with `agent`. ' +
        'When its budget is used up, further tasks are refused.',
      category: 'agents',
      adminOnly: true,
      parameters: Type.Object(
        {
          name: agentName,
          instructions: Type.String({
            minLength: 1,
            maxLength: 4_000,
            description: 'Standing instructions prepended to every task of this sub-agent',
          }),
          tasks: Type.Optional(
            Type.Array(Type.String({ minLength: 1, maxLength: 10_000 }), { maxItems: 10, description: 'Tasks to run now, in order' }),
          ),
          maxTasks: Type.Optional(
            Type.Integer({
              minimum: 1,
              maximum: MAX_TASKS_CAP,
              description: `Task budget (default ${DEFAULT_MAX_TASKS}, at most ${MAX_TASKS_CAP})`,
            }),
          ),
          maxSteps,
          waitMs,
        },
        { additionalProperties: false },
      ),
    },
    {
      name: 'list_delegations',
      description:
        'List delegated tasks (newest first) and sub-agents with their budgets. Filter by parentId (the action that delegated) or agent name.',
      category: 'agents',
      adminOnly: true,
      isParallelSafe: true,
      parameters: Type.Object(
        {
          parentId: Type.Optional(Type.String({ minLength: 1 })),
          agent: Type.Optional(agentName),
          limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, description: 'Most tasks listed (default 20)' })),
        },
        { additionalProperties: false },
      ),
    },
    {
      name: 'stop_agent',
      description: 'Stop a sub-agent: its running task is cancelled and it takes no more tasks. It stays listed.',
      category: 'agents',
      adminOnly: true,
      parameters: Type.Object({ name: agentName }, { additionalProperties: false }),
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
