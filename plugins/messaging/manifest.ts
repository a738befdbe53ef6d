/**
 * messaging: the skills every chat channel shares (send_file, send_voice_note, send_image, react), over the
 * running `channel:<name>` capabilities. See docs/messaging.md.
 */
import { Type, type PluginManifest } from '../../sdk/index.js';

const manifest = {
  id: 'messaging',
  version: '1.0.0',
  kind: 'skill',
  description: 'Messaging skills shared by all channels: send_file, send_voice_note, send_image (generate and send), react.',
  permissions: { filesystem: ['$KEEL_HOME'] },
  skills: [
    {
      name: 'send_file',
      isOutbound: true,
      description:
        'Send a local file to a chat. Channel: the `channel` given, else the channel the current message came from, else by the recipient id (a chatB JID suffix means chatB, 17-20 digits chatC, otherwise chatA).',
      category: 'messaging',
      parameters: Type.Object(
        {
          jid: Type.String({ minLength: 1, description: 'Recipient id (chat id, channel id, JID)' }),
          path: Type.String({ minLength: 1, description: 'Absolute path of the file' }),
          caption: Type.Optional(Type.String()),
          channel: Type.Optional(Type.String({ minLength: 1, description: 'chatA, chatB, chatC, gateway-chat ...' })),
        },
        { additionalProperties: false },
      ),
    },
    {
      name: 'send_voice_note',
      isOutbound: true,
      description:
        'Speak a text (providerA or providerB speech) and send it as a voice note (chatA, chatB) or an audio file (other channels).',
      category: 'messaging',
      parameters: Type.Object(
        {
          jid: Type.String({ minLength: 1 }),
          text: Type.String({ minLength: 1, maxLength: 4096 }),
          voice: Type.Optional(
            Type.String({
              minLength: 1,
              description: 'providerA: alloy, echo, fable, onyx, nova, shimmer; providerB: achernar, alnilam, kore, ...',
            }),
          ),
          channel: Type.Optional(Type.String({ minLength: 1 })),
        },
        { additionalProperties: false },
      ),
    },
    {
      name: 'send_image',
      isOutbound: true,
      description:
        'Generate an image (providerA or providerB) and send it in one step. Prefer it over generate_image followed by send_file.',
      category: 'messaging',
      parameters: Type.Object(
        {
          jid: Type.String({ minLength: 1 }),
          prompt: Type.String({ minLength: 1, maxLength: 4000 }),
          channel: Type.Optional(Type.String({ minLength: 1 })),
          size: Type.Optional(
            Type.Union([Type.Literal('1024x1024'), Type.Literal('1024x1792'), Type.Literal('1792x1024')], { default: '1024x1024' }),
          ),
          quality: Type.Optional(Type.Union([Type.Literal('medium'), Type.Literal('standard'), Type.Literal('hd')], { default: 'medium' })),
          caption: Type.Optional(Type.String()),
        },
        { additionalProperties: false },
      ),
    },
    {
      name: 'react',
      isOutbound: true,
      description:
        'React to a message with an emoji: a raw emoji or one of thumbs_up, love, fire, laugh, check, eyes, thinking. Channel and chat default to those of the current message.',
      category: 'messaging',
      parameters: Type.Object(
        {
          message_id: Type.String({ minLength: 1 }),
          emoji: Type.String({ minLength: 1 }),
          channel: Type.Optional(Type.String({ minLength: 1 })),
          chat_id: Type.Optional(Type.String({ minLength: 1 })),
        },
        { additionalProperties: false },
      ),
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
