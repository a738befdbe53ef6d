/**
 * The echo channel's manifest: a channel plugin says `kind: 'channel'`, provides `channel:<name>` and declares
 * the form of its user ids in `channel`, so `adminUsers.echo` entries are checked against it.
 */
import { Type, type PluginManifest } from 'keel/sdk';

const manifest = {
  id: 'echo-channel',
  version: '1.0.0',
  kind: 'channel',
  description: 'A tiny chat channel over loopback HTTP: POST a message, read the answers back; /echo is answered at once.',
  provides: ['channel:echo'],
  channel: { name: 'echo', userIdPattern: '^[a-z][a-z0-9-]{0,31}$', userIdExample: 'alice' },
  permissions: { network: true },
  config: {
    echoChannelPort: {
      schema: Type.Integer({ minimum: 0, maximum: 65535 }),
      default: 8790,
      env: ['ECHO_CHANNEL_PORT'],
      policy: 'APPROVAL',
      description: 'Loopback port the echo channel listens on (0: any free port).',
    },
    echoChannelAutoReply: {
      schema: Type.Boolean(),
      default: true,
      env: ['ECHO_CHANNEL_AUTO_REPLY'],
      policy: 'SAFE',
      description: 'Answer every message; when false only commands and mentions reach the agent.',
    },
  },
} as const satisfies PluginManifest;

export default manifest;
