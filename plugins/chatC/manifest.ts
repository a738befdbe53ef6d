/**
 * chatC: the Discord channel (discord.js), on the channel kit. See docs/discord.md.
 */
import { SPEC_CHANNELS, Type, type PluginManifest } from '../../sdk/index.js';

const manifest = {
  id: 'chatC',
  version: '1.0.0',
  kind: 'channel',
  description:
    'Discord channel (chatC): gateway with resume and a heartbeat watchdog, durable ingress, replies as Discord Markdown threaded to the message and sent with an enforced nonce, slash commands, reactions.',
  provides: ['channel:chatC'],
  channel: SPEC_CHANNELS.chatC,
  permissions: { network: true, filesystem: ['$KEEL_HOME'], secrets: ['chatCToken', 'queueRedisUrl', 'queueRedisSigningKey'] },
  config: {
    chatCToken: {
      schema: Type.String({
        pattern: '^[A-Za-z0-9_.-]{20,}$',
        title: 'a Discord bot token: at least 20 letters, digits, ".", "_" or "-" (Developer Portal → your app → Bot → Reset Token)',
      }),
      env: ['CHATC_TOKEN'],
      policy: 'LOCKED',
      secret: true,
      description:
        'Discord bot token (Developer Portal → your application → Bot → Reset Token). Without it the channel stays off. LOCKED per SPEC.',
    },
    chatCAutoReplyEnabled: {
      schema: Type.Boolean(),
      default: false,
      env: ['CHATC_AUTO_REPLY_ENABLED'],
      policy: 'APPROVAL',
      description:
        'Answer every message the bot can read; when false only mentions of the bot (or replies to it) in servers, direct messages and slash commands are answered.',
    },
    chatCFollowThreads: {
      schema: Type.Boolean(),
      default: true,
      env: ['CHATC_FOLLOW_THREADS'],
      policy: 'APPROVAL',
      description:
        'With chatCAutoReplyEnabled false: a message in a thread the bot takes part in (it was addressed in the thread, or the thread was started from one of its messages) is answered without a mention. false: every server message must mention or reply to the bot.',
    },
    chatCApiUrl: {
      schema: Type.String({ pattern: '^https?://' }),
      default: 'https://discord.com/api',
      env: ['CHATC_API_URL'],
      policy: 'LOCKED',
      description:
        'Discord REST API base (v10 is appended); the gateway URL is discovered from it (GET /gateway/bot). For a proxy or a test server. LOCKED: the token is sent there.',
    },
    chatCCatchUpInterval: {
      schema: Type.Integer({ minimum: 0, maximum: 86400 }),
      default: 300,
      env: ['CHATC_CATCH_UP_INTERVAL'],
      policy: 'SAFE',
      description:
        'Seconds between reads of the history of recently active channels, for messages the gateway session did not deliver; finding such messages also rebuilds the connection with a new session. 0: the history is read only after each new session.',
    },
  },
  skills: [
    {
      name: 'send_chatC',
      isOutbound: true,
      description:
        'Send a Markdown message to a Discord channel (or DM channel) by its id. Long messages are split into parts of at most 2,000 characters. Returns the message id(s).',
      category: 'messaging',
      parameters: Type.Object(
        {
          channel_id: Type.String({ minLength: 1, description: 'Discord channel id: a snowflake of 17 to 20 digits' }),
          message: Type.String({ minLength: 1, description: 'Markdown (rendered as Discord Markdown)' }),
        },
        { additionalProperties: false },
      ),
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
