/**
 * System: command execution under the command policy, the confirmation flow, and configuration by the agent
 * (SPEC "Security keys", "Modes", "Configuration policy classes"). Rules and limits: docs/security.md.
 */
import { Type, type PluginManifest } from '../../sdk/index.js';

const manifest = {
  id: 'system',
  version: '1.0.0',
  kind: 'skill',
  description:
    'System: run_command (no shell, allow/deny lists on every program it would start, human confirmation), approve_command, manage_config.',
  permissions: { commands: true, filesystem: ['$KEEL_HOME'] },
  provides: ['approvals', 'gateway:routes:system'],
  config: {
    commandTimeoutMs: {
      schema: Type.Integer({ minimum: 100, maximum: 86_400_000 }),
      default: 120_000,
      env: ['KEEL_COMMAND_TIMEOUT_MS'],
      // SAFE: it only bounds how long an already-permitted command may run; it cannot widen what runs.
      policy: 'SAFE',
      description: 'Milliseconds after which a running command and every process it started are killed (SPEC: 120000).',
    },
    commandRetries: {
      schema: Type.Integer({ minimum: 0, maximum: 5 }),
      default: 1,
      env: ['KEEL_COMMAND_RETRIES'],
      policy: 'SAFE',
      description:
        'How many more times a command is tried when it could not be started for a passing reason (EAGAIN, EMFILE...). A command that ran is never re-run on its own.',
    },
    commandWorkingDir: {
      schema: Type.String({ minLength: 1 }),
      // No static default: a manifest is data (dist/plugins/manifests.json is written at build time), so the
      // "current directory" default is applied at run time by the plugin.
      env: ['KEEL_COMMAND_WORKING_DIR'],
      // LOCKED: a cwd given to run_command must stay inside it (unless sudoMode), so moving it widens what commands reach.
      policy: 'LOCKED',
      description:
        'Folder commands run in by default; when unset, the current directory of the Keel process. A `cwd` given to run_command must lie inside it unless sudoMode is on.',
    },
    autoExecuteCommands: {
      schema: Type.Boolean(),
      default: false,
      env: ['KEEL_AUTO_EXECUTE_COMMANDS'],
      // LOCKED: turning it on removes the human from every command; only the operator may decide that.
      policy: 'LOCKED',
      description:
        'When false (the default), every run_command waits for a human to approve it (approve_command, or `keel commands approve <id>`). When true, permitted commands run at once.',
    },
    commandOutputMaxBytes: {
      schema: Type.Integer({ minimum: 1024, maximum: 16 * 1024 * 1024 }),
      default: 65_536,
      env: ['KEEL_COMMAND_OUTPUT_MAX_BYTES'],
      policy: 'SAFE',
      description:
        'Largest part of stdout and of stderr kept from a command (64 KiB by default); the rest is dropped and the result says "truncated".',
    },
    commandIsolation: {
      schema: Type.Union([Type.Literal('auto'), Type.Literal('required'), Type.Literal('strict'), Type.Literal('off')]),
      default: 'auto',
      env: ['KEEL_COMMAND_ISOLATION'],
      // LOCKED: `off` and `required` take away (part of) the operating system's enforcement of commandDenyList; only the operator may.
      policy: 'LOCKED',
      description:
        'How commands are kept from the programs on commandDenyList beyond the argv check (Linux). Each command runs in a private mount and pid namespace where those programs are replaced by stubs; strict isolation also lets nothing run from a place the command can write (closes downloaded, extracted or copied binaries; project-local tools such as node_modules/.bin scripts of the working folder and build outputs do not run). `auto` (the default) is strict wherever the system allows it, else the stubs alone, else no isolation, and says so at start, in `keel doctor` and in every result; `required` is the stubs alone (for build tools) and refuses commands where there are none; `strict` refuses commands where strict isolation is impossible; `off` never isolates (diagnosis only). See docs/security.md.',
    },
    commandConfirmationTtlMinutes: {
      schema: Type.Integer({ minimum: 1, maximum: 10_080 }),
      default: 30,
      env: ['KEEL_COMMAND_CONFIRMATION_TTL_MINUTES'],
      // APPROVAL: a longer life makes a forgotten request easier to approve by mistake much later.
      policy: 'APPROVAL',
      description: 'Minutes a command waits for confirmation before it expires and is dropped (30 by default).',
    },
    approvalExpiryMinutes: {
      schema: Type.Integer({ minimum: 1, maximum: 10_080 }),
      default: 10,
      env: ['KEEL_APPROVAL_EXPIRY_MINUTES'],
      // APPROVAL: as commandConfirmationTtlMinutes, a longer life makes a forgotten request easier to approve by mistake.
      policy: 'APPROVAL',
      description:
        'Minutes an approval request sent to a chat (Approve / Refuse buttons for a command or a configuration change the agent asked for) waits for an admin before it expires, with a message, and what it asked for is dropped (10 by default). See docs/approvals.md.',
    },
  },
  skills: [
    {
      name: 'run_command',
      description:
        'Run one program without a shell: `command` is parsed into an argv (quotes and escapes, no pipes, `;`, `&&`, redirections or substitutions), or is the program itself when `args` is given. Every program it would start is checked against commandAllowList and commandDenyList. Unless autoExecuteCommands is on, the command waits for a human to approve it and the result gives its id. Admin only.',
      category: 'system',
      parameters: Type.Object(
        {
          command: Type.String({ minLength: 1, maxLength: 8192, description: 'The command line, or the program when args is given' }),
          args: Type.Optional(
            Type.Array(Type.String({ maxLength: 8192 }), { maxItems: 256, description: 'Arguments, passed as they are' }),
          ),
          cwd: Type.Optional(
            Type.String({ minLength: 1, description: 'Working folder, inside commandWorkingDir (default commandWorkingDir)' }),
          ),
        },
        { additionalProperties: false },
      ),
      adminOnly: true,
      isDangerous: true,
      isDeep: false,
      isParallelSafe: false,
    },
    {
      name: 'approve_command',
      description:
        'Approve (run) or refuse a command waiting for confirmation. Only a human admin may: the operator, a channel admin, or the agent working for one; never the agent on its own. The policy is checked again before it runs. Admin only.',
      category: 'system',
      parameters: Type.Object(
        {
          id: Type.String({ minLength: 1, description: 'Id of the pending command (cmd_...)' }),
          decision: Type.Union([Type.Literal('approve'), Type.Literal('refuse')], { description: 'approve runs it; refuse drops it' }),
        },
        { additionalProperties: false },
      ),
      adminOnly: true,
      isDangerous: true,
      isParallelSafe: false,
    },
    {
      name: 'manage_config',
      description:
        'Show the configuration (secrets masked; detail "policy" gives each key\'s SAFE/APPROVAL/LOCKED class), set a key (SAFE applies, APPROVAL waits for a human, LOCKED is refused), list pending changes, or approve one (a human only). Admin only.',
      category: 'system',
      parameters: Type.Object(
        {
          action: Type.Union([Type.Literal('show'), Type.Literal('set'), Type.Literal('pending'), Type.Literal('approve')]),
          detail: Type.Optional(Type.Literal('policy')),
          key: Type.Optional(
            Type.String({ minLength: 1, description: 'Key to show or set; for approve, the pending change id (or pass it as value)' }),
          ),
          value: Type.Optional(
            Type.Unknown({
              description:
                'New value (a string is parsed by the key type: JSON for lists and objects, true/false, numbers); for approve, the pending id',
            }),
          ),
          reason: Type.Optional(Type.String({ maxLength: 1000, description: 'Why the change is wanted (kept with a pending change)' })),
        },
        { additionalProperties: false },
      ),
      adminOnly: true,
      isParallelSafe: false,
    },
  ],
  cli: [
    {
      name: 'commands [action] [id]',
      description: 'List commands waiting for confirmation, or approve / refuse one: keel commands [list|approve <id>|refuse <id>]',
      options: [{ flags: '--json', description: 'machine-readable output' }],
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
