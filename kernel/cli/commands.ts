/**
 * The built-in commands as data. commander is built from this table (program.ts), and `keel --help` is
 * rendered from it without loading commander (root-help.ts): one source, two renderers.
 */
export interface OptionSpec {
  flags: string;
  description: string;
  default?: string;
  hidden?: boolean;
}

export interface CommandSpec {
  /** `['config', 'set']` for `keel config set`. */
  path: string[];
  /** commander argument syntax, e.g. `<key> <value>`. */
  args?: Array<{ syntax: string; description?: string }>;
  description: string;
  options?: OptionSpec[];
  /** Only groups sub-commands (`keel config`). */
  group?: boolean;
}

const json: OptionSpec = { flags: '--json', description: 'machine-readable output' };

export const DESCRIPTION = 'Keel: an autonomous agent service. Tasks go into a priority queue; the agent carries them out with skills.';

export const GLOBAL_OPTIONS: OptionSpec[] = [
  { flags: '--config <file>', description: 'configuration file (default $KEEL_HOME/keel.config.yaml)' },
];

export const COMMANDS: CommandSpec[] = [
  {
    path: ['push'],
    args: [{ syntax: '<task...>', description: 'what the agent should do' }],
    description: 'Add a task to the queue (it runs while `keel run` runs)',
    options: [
      { flags: '-p, --priority <1-10>', description: 'priority, higher runs first; clamped to 1..10', default: '5' },
      {
        flags: '--key <idempotency-key>',
        description: 'a push retried with the same key (within 24 h) is the same action, not a second one',
      },
      { ...json, description: 'print the queued action as JSON' },
    ],
  },
  {
    path: ['run'],
    description: 'Run the agent: take tasks from the queue and carry them out',
    options: [
      { flags: '-d, --daemon', description: 'run detached in the background; logs to $KEEL_HOME/daemon.log' },
      { flags: '--with-gateway', description: 'also start the gateway in this process (needs the gateway plugin)' },
      { flags: '--foreground-daemon', description: 'internal: the detached process itself', hidden: true },
    ],
  },
  {
    path: ['status'],
    description: 'Show whether Keel runs, its processes, the queue and plugin problems (exit 3 when not running)',
    options: [json],
  },
  {
    path: ['stop'],
    description: 'Stop every Keel process started for this KEEL_HOME (agent, background gateway)',
    options: [json, { flags: '-t, --timeout <ms>', description: 'how long to wait before killing', default: '10000' }],
  },
  { path: ['tasks'], description: 'List queued, completed and failed actions', options: [json] },
  {
    path: ['cancel'],
    args: [{ syntax: '<id>', description: 'the action id (keel tasks lists them)' }],
    description: 'Cancel a task: a waiting one is removed, a running one is stopped wherever it runs (exit 1 when it had already settled)',
    options: [
      json,
      { flags: '-r, --reason <text>', description: 'why (recorded as its error)', default: 'cancelled by the operator (keel cancel)' },
    ],
  },
  { path: ['config'], description: 'Read and change configuration ($KEEL_HOME/keel.config.yaml)', group: true },
  {
    path: ['config', 'set'],
    args: [{ syntax: '<key>' }, { syntax: '<value>' }],
    description: 'Set a key (operator: any key; values parsed by the key type: true/false, numbers, JSON arrays/objects)',
    options: [json],
  },
  {
    path: ['config', 'get'],
    args: [{ syntax: '[key]' }],
    description: 'Print effective values (secrets masked); all keys when none is named',
    options: [json, { flags: '--source', description: 'show where each value comes from (default, file, env, override)' }],
  },
  { path: ['config', 'pending'], description: 'List configuration changes the agent asked for that wait for approval', options: [json] },
  { path: ['config', 'approve'], args: [{ syntax: '<id>' }], description: 'Approve a pending change by id' },
  { path: ['config', 'reject'], args: [{ syntax: '<id>' }], description: 'Reject a pending change by id' },
  {
    path: ['plugins'],
    description: 'List plugins with their state (loaded, disabled by list, quarantined, invalid)',
    options: [json],
  },
  { path: ['plugins', 'enable'], args: [{ syntax: '<id>' }], description: 'Lift the quarantine of a plugin (after repairing it)' },
  { path: ['skills'], description: 'List skills from plugin manifests and custom skills', options: [json] },
];
