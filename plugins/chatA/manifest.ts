/**
 * chatA: the Telegram Bot API channel (grammy), on the channel kit. See docs/telegram.md.
 */
import { Type, type PluginManifest } from '../../sdk/index.js';

const chatId = Type.Union([Type.String({ minLength: 1 }), Type.Integer()], {
  description: 'Numeric chat id (a placeholder or name is replaced by the chat of the current message)',
});
const messageId = Type.Integer({ minimum: 1, description: 'Telegram message id (as returned by send_chatA)' });

const manifest = {
  id: 'chatA',
  version: '1.0.0',
  kind: 'channel',
  description:
    'Telegram channel (chatA): long polling with durable ingress, ledgered replies rendered as Telegram HTML, command menu, buttons, polls, reactions, pins.',
  provides: ['channel:chatA'],
  channel: { name: 'chatA', userIdPattern: '^-?\\d+$', userIdExample: '123456789' },
  permissions: { network: true, filesystem: ['$KEEL_HOME'], secrets: ['chatAToken', 'queueRedisUrl', 'queueRedisSigningKey'] },
  config: {
    chatAToken: {
      schema: Type.String({
        pattern: '^\\d+:[A-Za-z0-9_-]+$',
        title:
          'a Telegram bot token: the bot\'s number, a colon, then letters, digits, "_" or "-" (like 123456789:AAH4x..., from @BotFather)',
      }),
      env: ['CHATA_TOKEN'],
      policy: 'LOCKED',
      secret: true,
      description: 'Telegram bot token from @BotFather (digits:secret). Without it the channel stays off. LOCKED per SPEC.',
    },
    chatAAutoReplyEnabled: {
      schema: Type.Boolean(),
      default: false,
      env: ['CHATA_AUTO_REPLY_ENABLED'],
      policy: 'APPROVAL',
      description: 'Reply to every message; when false only slash commands, and mentions or replies to the bot in groups, become actions.',
    },
    chatACommands: {
      schema: Type.Array(
        Type.Object(
          {
            command: Type.String({
              pattern: '^[a-z0-9_]{1,32}$',
              title: 'a command name of 1 to 32 lowercase letters, digits or "_", without the "/"',
            }),
            description: Type.String({ minLength: 1, maxLength: 256 }),
          },
          { additionalProperties: false },
        ),
      ),
      env: ['CHATA_COMMANDS'],
      policy: 'APPROVAL',
      description:
        'The bot’s command menu (setMyCommands); unset: status, queue, cancel, reset, models, help. Those six are answered by the channel itself; other commands become actions.',
    },
    chatAPollTimeout: {
      schema: Type.Integer({ minimum: 1, maximum: 50 }),
      default: 25,
      env: ['CHATA_POLL_TIMEOUT'],
      policy: 'SAFE',
      description: 'Seconds a getUpdates long poll waits for news; a poll silent for this plus 5 s is a stalled connection and is rebuilt.',
    },
    chatAApiRoot: {
      schema: Type.String({ pattern: '^https?://' }),
      default: 'https://api.telegram.org',
      env: ['CHATA_API_ROOT'],
      policy: 'LOCKED',
      description: 'Bot API root (a self-hosted Bot API server, or a test server). LOCKED: the token is sent there.',
    },
  },
  skills: [
    {
      name: 'send_chatA',
      isOutbound: true,
      description: 'Send a Markdown message to a Telegram chat. Returns the message id (for chatA_edit_message).',
      category: 'messaging',
      parameters: Type.Object({ chatId, message: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
    },
    {
      name: 'chatA_send_buttons',
      description:
        'Send a message with inline buttons: a 2D array of rows of {text, callback_data | url}; a 1D array puts each button on its own row.',
      category: 'messaging',
      parameters: Type.Object(
        {
          chatId,
          message: Type.String({ minLength: 1 }),
          buttons: Type.Array(Type.Unknown(), { minItems: 1 }),
        },
        { additionalProperties: false },
      ),
    },
    {
      name: 'chatA_send_poll',
      description: 'Send a poll with 2 to 10 options.',
      category: 'messaging',
      parameters: Type.Object(
        {
          chatId,
          question: Type.String({ minLength: 1, maxLength: 300 }),
          options: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { minItems: 2, maxItems: 10 }),
          isAnonymous: Type.Optional(Type.Boolean({ default: true })),
          allowsMultipleAnswers: Type.Optional(Type.Boolean({ default: false })),
        },
        { additionalProperties: false },
      ),
    },
    {
      name: 'chatA_edit_message',
      description: 'Replace the text of a message the bot sent.',
      category: 'messaging',
      parameters: Type.Object({ chatId, messageId, newText: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
    },
    {
      name: 'chatA_react',
      description: 'React to a message with an emoji (default 👍). Where the bot cannot react, it replies with the emoji instead.',
      category: 'messaging',
      parameters: Type.Object(
        { chatId, messageId, emoji: Type.Optional(Type.String({ minLength: 1, default: '\u{1F44D}' })) },
        { additionalProperties: false },
      ),
    },
    {
      name: 'chatA_pin_message',
      description: 'Pin a message (the bot must be an admin in groups and channels).',
      category: 'messaging',
      parameters: Type.Object(
        { chatId, messageId, silent: Type.Optional(Type.Boolean({ default: true })) },
        { additionalProperties: false },
      ),
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
