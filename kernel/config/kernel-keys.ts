/**
 * The configuration keys the kernel itself owns (registered under the owner `kernel`).
 *
 * Only what every plugin must agree on lives here: the queue, the security modes and lists,
 * admin identity, sessions and the plugin host. Providers, channels, the gateway, telemetry
 * and command execution declare their keys in their own manifests.
 *
 * The spec names no environment variables for these keys; the ones given here carry a KEEL_
 * prefix so a generic name like SAFE_MODE set for some other program cannot flip Keel's modes.
 */
import Type from 'typebox';
import { SPEC_CHANNELS } from '../../sdk/channel.js';
import { DEFAULT_COMMAND_ALLOW_LIST, DEFAULT_COMMAND_DENY_LIST } from '../../sdk/config-keys.js';
import type { ConfigKeySpec } from '../../sdk/types.js';

export const KERNEL_OWNER = 'kernel';

/** SPEC's channels with an admin allowlist (SPEC "adminUsers"); a channel plugin may add its own. */
export const ADMIN_CHANNELS = Object.keys(SPEC_CHANNELS) as Array<keyof typeof SPEC_CHANNELS>;

export { DEFAULT_COMMAND_ALLOW_LIST, DEFAULT_COMMAND_DENY_LIST };

const StringList = () => Type.Array(Type.String());
const PositiveInt = () => Type.Integer({ minimum: 1 });
/** An identity in identityLinks, in words. */
const IDENTITY = 'an identity "<channel>:<user_id>", like chatA:123456789';

export const KERNEL_KEYS = {
  // ---------------------------------------------------------------- queue
  queueCompletedLimit: {
    schema: Type.Integer({ minimum: 0 }),
    default: 100,
    env: ['KEEL_QUEUE_COMPLETED_LIMIT'],
    policy: 'SAFE',
    description: 'How many completed actions the queue keeps for `keel status` and the gateway; older ones are dropped.',
  },
  queueFailedLimit: {
    schema: Type.Integer({ minimum: 0 }),
    default: 100,
    env: ['KEEL_QUEUE_FAILED_LIMIT'],
    policy: 'SAFE',
    description: 'How many failed actions the queue keeps for inspection; older ones are dropped.',
  },
  queueRedisUrl: {
    schema: Type.String({ pattern: '^rediss?://.+' }),
    env: ['KEEL_QUEUE_REDIS_URL'],
    policy: 'LOCKED',
    secret: true,
    description:
      'A Redis (redis://[:password@]host:port[/db], rediss:// for TLS) that holds the action queue instead of KEEL_HOME, so that several `keel run` processes on several machines share one queue (docs/scaling.md). Unset: the file queue. Read at start. LOCKED: it decides where every task goes.',
  },
  queueRedisPrefix: {
    schema: Type.String({
      pattern: '^[A-Za-z0-9:_.-]{1,64}$',
      title: 'a key prefix of 1 to 64 letters, digits, ":", "_", "." or "-" (like keel:)',
    }),
    default: 'keel:',
    env: ['KEEL_QUEUE_REDIS_PREFIX'],
    policy: 'LOCKED',
    description: "Prefix of the shared queue's Redis keys, so that several Keel deployments can share one Redis.",
  },
  queueRedisSigningKey: {
    schema: Type.String({ minLength: 32, title: 'a signing key of at least 32 characters (e.g. from `openssl rand -base64 32`)' }),
    env: ['KEEL_QUEUE_REDIS_SIGNING_KEY'],
    policy: 'LOCKED',
    secret: true,
    description:
      'Shared queue: a key (at least 32 characters, the same on every machine, e.g. `openssl rand -base64 32`) with which every op and the base in Redis are signed; ops without a valid signature are ignored and reported, so something else that can write to the Redis cannot queue a task as the operator. Unset: nothing is signed. Read at start. LOCKED.',
  },
  queueWorkerLeaseSeconds: {
    schema: Type.Integer({ minimum: 2, maximum: 600 }),
    default: 15,
    env: ['KEEL_QUEUE_WORKER_LEASE_SECONDS'],
    policy: 'LOCKED',
    description:
      "Shared queue: how long a runner's lease lasts without renewal (renewed every third of it). An action whose runner died goes back to the queue after at most this long.",
  },

  // ---------------------------------------------------------------- security modes
  safeMode: {
    schema: Type.Boolean(),
    default: false,
    env: ['KEEL_SAFE_MODE'],
    policy: 'LOCKED',
    description: 'Blocks run_command and create_custom_skill for everyone and restricts command-based operations.',
  },
  sudoMode: {
    schema: Type.Boolean(),
    default: false,
    env: ['KEEL_SUDO_MODE'],
    policy: 'LOCKED',
    description: 'Bypasses the command allow list. The deny list still applies.',
  },
  overrideMode: {
    schema: Type.Boolean(),
    default: false,
    env: ['KEEL_OVERRIDE_MODE'],
    policy: 'LOCKED',
    description: 'Experimental: bypasses persona behavioural boundaries.',
  },
  commandAllowList: {
    schema: StringList(),
    default: [...DEFAULT_COMMAND_ALLOW_LIST],
    policy: 'LOCKED',
    description:
      'Programs run_command may start. An empty list blocks all commands unless sudoMode is on. ' +
      'LOCKED although the spec names no class for it: an agent that could add a program here could grant itself any command.',
  },
  commandDenyList: {
    schema: StringList(),
    default: [...DEFAULT_COMMAND_DENY_LIST],
    policy: 'LOCKED',
    description: 'Programs that never run, even in sudo mode; it wins over the allow list.',
  },
  adminUsers: {
    // Open record: any channel plugin may have admins. Each id is checked against its channel's declared
    // user-id form (kernel/config/admin-users.ts); a bad id makes the value invalid, and an invalid adminUsers
    // falls back to "nobody is admin" rather than being half-read. A change naming an unknown channel is refused.
    schema: Type.Record(Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_-]*$' }), StringList()),
    policy: 'LOCKED',
    description:
      "Per-channel admin allowlist: keys chatA, chatB, chatC, chatD, email (or any installed channel plugin's name), each a " +
      'list of user ids (chatA numeric id, chatB JID, chatC snowflake, chatD member id, email address), checked against ' +
      'the form the channel declares. No default: when absent nobody is admin on any chat channel (the local operator always is).',
  },
  enableSelfModification: {
    schema: Type.Boolean(),
    default: false,
    policy: 'LOCKED',
    description: 'Lets the agent change its own code and skills.',
  },

  // ---------------------------------------------------------------- sessions
  sessionScope: {
    schema: Type.Union([Type.Literal('main'), Type.Literal('per-peer'), Type.Literal('per-channel-peer')]),
    default: 'per-channel-peer',
    env: ['KEEL_SESSION_SCOPE'],
    policy: 'APPROVAL',
    description:
      'main: one global session. per-peer: one session per person across channels (through identityLinks). ' +
      'per-channel-peer: one session per user per channel. Needs approval because a wider scope shares context between users.',
  },
  identityLinks: {
    schema: Type.Record(Type.String({ pattern: '^[^:]+:.+$' }), Type.String({ pattern: '^[^:]+:.+$', title: IDENTITY })),
    default: {},
    policy: 'LOCKED',
    description:
      'Map from "<channel>:<user_id>" to "<channel>:<user_id>" so one person is recognised on several channels ' +
      '(shared profile and context). LOCKED because a link also carries admin rights across the linked identities.',
  },

  // ---------------------------------------------------------------- plugins
  pluginAllowList: {
    schema: StringList(),
    default: [],
    policy: 'LOCKED',
    description: 'When non-empty, only these plugins load. LOCKED: the agent must not widen what code it runs.',
  },
  pluginDenyList: {
    schema: StringList(),
    default: [],
    policy: 'LOCKED',
    description: 'Plugins that never load; wins over the allow list.',
  },
  pluginHealthCheckIntervalMinutes: {
    schema: PositiveInt(),
    default: 15,
    env: ['KEEL_PLUGIN_HEALTH_CHECK_INTERVAL_MINUTES'],
    policy: 'SAFE',
    description: 'Minutes between plugin health checks (broken plugins are repaired with self_repair_skill). A diagnostic setting.',
  },
  // ---------------------------------------------------------------- housekeeping (docs/housekeeping.md)
  downloadsKeepDays: {
    schema: Type.Integer({ minimum: 0 }),
    default: 30,
    env: ['KEEL_DOWNLOADS_KEEP_DAYS'],
    policy: 'APPROVAL',
    description:
      'Days a file under $KEEL_HOME/downloads (attachments received on chat channels and by email, screenshots, generated images and speech, browser downloads) is kept after it was last written; the agent process removes older ones at start and daily. 0 keeps them for good. APPROVAL: a change decides what is deleted.',
  },
  logFileMaxMB: {
    schema: Type.Integer({ minimum: 0 }),
    default: 10,
    env: ['KEEL_LOG_FILE_MAX_MB'],
    policy: 'SAFE',
    description:
      'Size in MB at which a log file Keel writes (daemon.log, gateway.log, the token usage log) is moved to <name>.1 (one old copy is kept) and started afresh. 0 never rotates them.',
  },
  channelHistoryKeepDays: {
    schema: PositiveInt(),
    default: 30,
    env: ['KEEL_CHANNEL_HISTORY_KEEP_DAYS'],
    policy: 'SAFE',
    description:
      "Days the channels keep handled inbound messages (what recognises a platform's second delivery of the same message) and sent replies in their stores; older rows are dropped at start and daily.",
  },
} as const satisfies Record<string, ConfigKeySpec>;
