/**
 * chatB: the WhatsApp channel (a linked device through @whiskeysockets/baileys), on the channel kit. See docs/whatsapp.md.
 */
import { SPEC_CHANNELS, Type, type PluginManifest } from '../../sdk/index.js';

const JID = '^[0-9]+(?::[0-9]+)?@(?:s\\.whatsapp\\.net|c\\.us|lid)$';

const manifest = {
  id: 'chatB',
  version: '1.0.0',
  kind: 'channel',
  description:
    'WhatsApp channel (chatB) as a linked device: messages recorded before WhatsApp is told they arrived, replies as WhatsApp formatting quoting the message, each part sent once under a stable message id, typing, reactions, QR linking in the terminal and the dashboard.',
  provides: ['channel:chatB'],
  channel: SPEC_CHANNELS.chatB,
  permissions: { network: true, filesystem: ['$KEEL_HOME'], secrets: ['queueRedisUrl', 'queueRedisSigningKey'] },
  config: {
    chatBEnabled: {
      schema: Type.Boolean(),
      default: false,
      env: ['CHATB_ENABLED'],
      policy: 'LOCKED',
      description:
        'Run the WhatsApp channel. The first start shows a QR code (terminal and dashboard) to scan in WhatsApp → Linked devices. LOCKED per SPEC.',
    },
    chatBSessionPath: {
      schema: Type.String({ minLength: 1 }),
      default: '$KEEL_HOME/chatB-session',
      env: ['CHATB_SESSION_PATH'],
      policy: 'APPROVAL',
      description:
        'Directory of the linked-device session (its keys: keep it private, mode 0700). Persistent; deleting it forces re-linking. APPROVAL: whoever reads it can act as this device.',
    },
    chatBPairingPhone: {
      schema: Type.String({
        pattern: '^\\+?[0-9][0-9 ]{6,20}$',
        title: 'a phone number with its country code: 7 to 21 digits (spaces allowed), optionally after a "+" (like +4915123456789)',
      }),
      env: ['CHATB_PAIRING_PHONE'],
      policy: 'APPROVAL',
      description:
        "Link by phone number instead of the QR code (for a server without a terminal to scan): the account's number with its country code (e.g. +4915123456789). While not linked, Keel asks WhatsApp for a code and shows it in the log, `keel status` and the dashboard; enter it on that phone under Linked devices → Link with phone number instead.",
    },
    chatBAutoReplyEnabled: {
      schema: Type.Boolean(),
      default: false,
      env: ['CHATB_AUTO_REPLY_ENABLED'],
      policy: 'APPROVAL',
      description:
        'Answer every direct message, and group messages that mention the account or reply to it. When false only the owner (chatBOwnerJID), adminUsers.chatB and your own "message yourself" chat are answered, so linking a personal number never makes Keel answer your contacts.',
    },
    chatBOwnerJID: {
      schema: Type.String({
        pattern: JID,
        title:
          'a WhatsApp JID: the phone number with its country code, then @s.whatsapp.net (or @c.us, @lid), like 4915123456789@s.whatsapp.net',
      }),
      env: ['CHATB_OWNER_JID'],
      policy: 'APPROVAL',
      description:
        "The owner's JID (e.g. 4915123456789@s.whatsapp.net): their messages are answered even with auto-reply off, in direct chats and, when they mention the account, in groups. Admin rights still come from adminUsers.chatB.",
    },
    chatBStatusReplyEnabled: {
      schema: Type.Boolean(),
      default: false,
      env: ['CHATB_STATUS_REPLY_ENABLED'],
      policy: 'APPROVAL',
      description:
        "Reply to contacts' status updates: a status update from someone who would be answered in a direct chat becomes a task, answered in the direct chat with them.",
    },
    chatBAutoReactEnabled: {
      schema: Type.Boolean(),
      default: false,
      env: ['CHATB_AUTO_REACT_ENABLED'],
      policy: 'SAFE',
      description: 'React with 👀 to each message that becomes a task, as soon as it is queued (before the answer).',
    },
    chatBContextProfilingEnabled: {
      schema: Type.Boolean(),
      default: false,
      env: ['CHATB_CONTEXT_PROFILING_ENABLED'],
      policy: 'SAFE',
      description:
        'Keep a profile of each contact who writes (name, language, message count, recent topics; $KEEL_HOME/contacts/<jid>.json) and give it to the agent when that contact writes.',
    },
    chatBKeepAliveInterval: {
      schema: Type.Integer({ minimum: 1, maximum: 300 }),
      default: 30,
      env: ['CHATB_KEEP_ALIVE_INTERVAL'],
      policy: 'SAFE',
      description:
        'Seconds between pings to WhatsApp. A ping unanswered for this long plus 5 s closes the connection and a new one is made (a connection that stopped hearing). Lower it behind a NAT or proxy that drops quiet connections.',
    },
    chatBWebSocketUrl: {
      schema: Type.String({ pattern: '^wss?://' }),
      default: 'wss://web.whatsapp.com/ws/chat',
      env: ['CHATB_WS_URL'],
      policy: 'LOCKED',
      description: "WhatsApp's WebSocket endpoint, for a proxy or a test server. LOCKED: the session's keys authenticate there.",
    },
  },
  skills: [
    {
      name: 'send_chatB',
      isOutbound: true,
      description:
        'Send a Markdown message to a WhatsApp chat by JID (a contact: <number>@s.whatsapp.net, a group: <id>@g.us), rendered as WhatsApp formatting. Long messages are split into parts of at most 4,096 characters. Returns the message id(s).',
      category: 'messaging',
      parameters: Type.Object(
        {
          jid: Type.String({ minLength: 1, description: 'WhatsApp JID: <number>@s.whatsapp.net for a contact, <id>@g.us for a group' }),
          message: Type.String({ minLength: 1, description: 'Markdown (rendered as WhatsApp formatting)' }),
        },
        { additionalProperties: false },
      ),
    },
  ],
} as const satisfies PluginManifest;

export default manifest;
