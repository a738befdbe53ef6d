/**
 * chatD: the Slack channel (@slack/bolt in Socket Mode), on the channel kit. See docs/slack.md.
 */
import { Type, type PluginManifest } from '../../sdk/index.js';

const manifest = {
  id: 'chatD',
  version: '1.0.0',
  kind: 'channel',
  description:
    'Slack channel (chatD): Socket Mode with durable ingress (acknowledged only once recorded), ledgered replies rendered as mrkdwn, threads, slash commands, reactions, file uploads.',
  provides: ['channel:chatD'],
  channel: { name: 'chatD', userIdPattern: '^[UW][A-Z0-9]+$', userIdExample: 'U012AB3CD' },
  permissions: {
    network: true,
    filesystem: ['$KEEL_HOME'],
    secrets: ['chatDBotToken', 'chatDAppToken', 'chatDSigningSecret', 'queueRedisUrl', 'queueRedisSigningKey'],
  },
  config: {
    chatDBotToken: {
      schema: Type.String({
        pattern: '^xoxb-[A-Za-z0-9-]+$',
        title: 'a Slack bot token starting with "xoxb-" (OAuth & Permissions → Bot User OAuth Token)',
      }),
      env: ['CHATD_BOT_TOKEN'],
      policy: 'LOCKED',
      secret: true,
      description: 'Slack bot token (xoxb-...). Without it and chatDAppToken the channel stays off. LOCKED per SPEC.',
    },
    chatDAppToken: {
      schema: Type.String({
        pattern: '^xapp-[A-Za-z0-9-]+$',
        title: 'a Slack app-level token starting with "xapp-" (Basic Information → App-Level Tokens, scope connections:write)',
      }),
      env: ['CHATD_APP_TOKEN'],
      policy: 'LOCKED',
      secret: true,
      description: 'Slack app-level token (xapp-..., scope connections:write) that opens the Socket Mode connection. LOCKED per SPEC.',
    },
    chatDSigningSecret: {
      schema: Type.String({
        pattern: '^[0-9a-fA-F]{32}$',
        title: 'a Slack signing secret: 32 hexadecimal characters (Basic Information → App Credentials)',
      }),
      env: ['CHATD_SIGNING_SECRET'],
      policy: 'LOCKED',
      secret: true,
      description:
        'Slack signing secret. Socket Mode needs no request signatures (the socket is opened with the app token), so it is only checked for form; kept for an HTTP receiver. LOCKED per SPEC.',
    },
    chatDAutoReplyEnabled: {
      schema: Type.Boolean(),
      default: false,
      env: ['CHATD_AUTO_REPLY_ENABLED'],
      policy: 'APPROVAL',
      description: 'Reply to every message; when false only mentions of the bot, direct messages and commands become actions.',
    },
    chatDFollowThreads: {
      schema: Type.Boolean(),
      default: true,
      env: ['CHATD_FOLLOW_THREADS'],
      policy: 'APPROVAL',
      description:
        'With chatDAutoReplyEnabled false: a reply in a thread the bot takes part in (it was mentioned in the thread or in its first message, or the thread hangs under one of its own messages) is answered without a new mention. false: every channel message must mention the bot.',
    },
    chatDApiUrl: {
      schema: Type.String({ pattern: '^https?://' }),
      default: 'https://slack.com/api/',
      env: ['CHATD_API_URL'],
      policy: 'LOCKED',
      description:
        'Slack Web API base (the Socket Mode URL is asked for there with apps.connections.open). LOCKED: the tokens are sent there.',
    },
    chatDSocketTimeout: {
      schema: Type.Integer({ minimum: 2, maximum: 300 }),
      default: 30,
      env: ['CHATD_SOCKET_TIMEOUT'],
      policy: 'SAFE',
      description: 'Seconds the Socket Mode connection may stay silent (no event, ping or pong) before it is rebuilt.',
    },
    chatDCatchUpInterval: {
      schema: Type.Integer({ minimum: 0, maximum: 86400 }),
      default: 300,
      env: ['CHATD_CATCH_UP_INTERVAL'],
      policy: 'SAFE',
      description:
        'Seconds between reads of the history of recently active conversations (conversations.history), for messages Slack did not deliver over the socket; finding such messages also rebuilds the connection. 0: the history is read only after each new connection.',
    },
  },
  skills: [
    {
      name: 'send_chatD',
      isOutbound: true,
      description:
        'Send a Markdown message to a Slack conversation (channel C..., private channel G..., or direct message D...); long messages are split. Returns the message ts.',
      category: 'messaging',
      parameters: Type.Object(
        {
          channel_id: Type.String({
            minLength: 1,
            description:
              'Slack conversation id: C... (channel), G... (private) or D... (DM); a name is replaced by the conversation of the current message',
          }),
          message: Type.String({ minLength: 1 }),
        },
        { additionalProperties: false },
      ),
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
