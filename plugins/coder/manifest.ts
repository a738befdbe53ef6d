/**
 * Coder: agent-written code. create_custom_skill, execute_typescript and self_repair_skill; the code itself
 * always runs in the sandbox (a separate Node process under the permission model). Limits: docs/sandbox.md.
 */
import { Type, type PluginManifest } from '../../sdk/index.js';

const manifest = {
  id: 'coder',
  version: '1.0.0',
  kind: 'skill',
  description: 'Coder: create_custom_skill, execute_typescript and self_repair_skill; agent-written code runs in a sandboxed Node process.',
  requires: [],
  // Generated custom skills run their code through this (ctx.use('coder:sandbox') in the skill file).
  provides: ['coder:sandbox'],
  permissions: { commands: true, filesystem: ['$KEEL_HOME/skills'] },
  config: {
    coderTimeoutMs: {
      schema: Type.Integer({ minimum: 100, maximum: 600_000 }),
      default: 10_000,
      env: ['KEEL_CODER_TIMEOUT_MS'],
      // SAFE: it only bounds how long sandboxed code may run.
      policy: 'SAFE',
      description: 'Default milliseconds after which sandboxed code (execute_typescript, agent-created skills) is killed with SIGKILL.',
    },
    coderOutputMaxBytes: {
      schema: Type.Integer({ minimum: 1024, maximum: 16 * 1024 * 1024 }),
      default: 65_536,
      env: ['KEEL_CODER_OUTPUT_MAX_BYTES'],
      policy: 'SAFE',
      description: 'Largest part of stdout, of stderr and of the JSON result kept from sandboxed code (64 KiB by default).',
    },
  },
  skills: [
    {
      name: 'create_custom_skill',
      description:
        "Create or update a custom skill written by the agent: `code` is the TypeScript body of `async function run(args)` (use `await import()` for modules, return a JSON value). It is saved as $KEEL_HOME/skills/<name>.ts, hot-loaded as plugin skill-<name>, and every call runs in the sandbox (no access to Keel's files, config or secrets). Needs enableSelfModification. Admin only.",
      category: 'coding',
      parameters: Type.Object(
        {
          // The name rule ([a-z][a-z0-9_]{1,47}) is checked by the skill, so its refusal can say what is allowed.
          name: Type.String({
            minLength: 2,
            maxLength: 48,
            description: 'Skill name: lower-case letters, digits and _, starting with a letter; the file is <name>.ts',
          }),
          description: Type.String({ minLength: 3, maxLength: 1000, description: 'What the skill does (shown to the model)' }),
          code: Type.String({
            minLength: 1,
            maxLength: 200_000,
            description: 'TypeScript body of async function run(args); its return value is the result',
          }),
          parameters: Type.Optional(
            Type.Object({}, { additionalProperties: true, description: 'JSON Schema (type object) of the arguments; default: any object' }),
          ),
          network: Type.Optional(
            Type.Boolean({
              description:
                'Let the skill use the network (default false). A skill with the network is always admin-only, and on untrusted work it is refused as an outbound skill whose recipient cannot be known (docs/sandbox.md)',
            }),
          ),
          adminOnly: Type.Optional(
            Type.Boolean({
              description: 'Only admins may call the new skill (default true; false lets everyone call it; ignored with network)',
            }),
          ),
          overwrite: Type.Optional(Type.Boolean({ description: 'Replace a skill file a person wrote (default false)' })),
        },
        { additionalProperties: false },
      ),
      adminOnly: true,
      isDangerous: true,
      isParallelSafe: false,
    },
    {
      name: 'execute_typescript',
      description:
        "Run a TypeScript snippet in the sandbox: `code` is the body of an async function (use `await import()` for modules); returns stdout, stderr, exit code and the returned value as JSON. No access to Keel's files, config or secrets; killed at the timeout. Admin only.",
      category: 'coding',
      parameters: Type.Object(
        {
          code: Type.String({
            minLength: 1,
            maxLength: 200_000,
            description: 'TypeScript body of an async function; its return value is the result',
          }),
          timeoutMs: Type.Optional(
            Type.Integer({ minimum: 100, maximum: 600_000, description: 'Kill after this many ms (default coderTimeoutMs, 10000)' }),
          ),
          args: Type.Optional(Type.Unknown({ description: 'Value passed to the snippet as `args`' })),
        },
        { additionalProperties: false },
      ),
      adminOnly: true,
      isDangerous: true,
      isParallelSafe: true,
    },
    {
      name: 'self_repair_skill',
      description:
        "Repair a broken or quarantined custom skill created by the agent (plugin skill-<name>) with the model's help: the fix replaces the file only if it compiles (a backup <name>.ts.bak is kept); otherwise the last good version stays. For other plugins it returns the source path, the failure and how to re-enable it. Needs enableSelfModification. Admin only.",
      category: 'coding',
      parameters: Type.Object(
        {
          plugin: Type.String({ minLength: 1, maxLength: 64, description: 'Plugin id, e.g. skill-word_count' }),
          hint: Type.Optional(Type.String({ maxLength: 4000, description: 'What is wrong, in your words' })),
        },
        { additionalProperties: false },
      ),
      adminOnly: true,
      isDangerous: true,
      isParallelSafe: false,
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
