/**
 * Outbound skills (issue 35): skills that send something out of Keel, and whom each call would send to.
 *
 * On untrusted work (a web page, a mail, a non-admin chat, knowledge content or a quoted message was read) such
 * a skill may only answer the requester, unless the local operator is behind the work (authorize.ts). That needs
 * the recipient of each call: it is read here from the skill's arguments the way the skill itself reads them
 * (including the placeholders chatA and chatD replace by the current chat). A skill whose recipient cannot be read
 * this way (a user channel's `send_x`, an agent-written skill with network access) gets `undefined`, and the
 * policy refuses it on untrusted work.
 */
import { CHANNEL_NAMES } from '../../sdk/plugin.js';
import { type Address, detectChannel, idText } from '../../sdk/outbound.js';
import type { Action, SkillManifest } from '../../sdk/types.js';

/** Outbound by name whatever their manifest says: a manifest cannot make send_file ordinary by leaving the flag off. */
export const OUTBOUND_SKILLS: ReadonlySet<string> = new Set(['send_file', 'send_voice_note', 'send_image', 'react', 'send_email']);

/** Skills named after a chat channel (`chatA_send_poll`, `chatA_pin_message` ...) talk to that channel. */
const CHANNEL_PREFIXES = CHANNEL_NAMES.filter((c) => c !== 'email').map((c) => `${c}_`);

/**
 * Whether a skill sends something out of Keel: the names above, every `send_*` (send_chatA ... send_chatD, a user
 * channel's send skill), every skill prefixed by a chat channel's name, and any manifest with `isOutbound: true`.
 */
export function isOutboundSkill(skill: Pick<SkillManifest, 'name' | 'isOutbound'>): boolean {
  const name = skill.name;
  return (
    skill.isOutbound === true || OUTBOUND_SKILLS.has(name) || name.startsWith('send_') || CHANNEL_PREFIXES.some((p) => name.startsWith(p))
  );
}

type Args = Record<string, unknown>;
type Reader = (args: Args, action: Action | undefined) => Address[] | undefined;

/** The chat of the current action when it came from `channel`. */
function currentChat(action: Action | undefined, channel: string): string | undefined {
  return action?.source === channel ? idText(action.metadata?.replyTo?.chatId) : undefined;
}

/** chatA's resolveChat: a numeric id as given, else the chat of the current chatA message (a placeholder such as "me"). */
const chatA: Reader = (args, action) => {
  const raw = idText(args.chatId);
  if (raw === undefined) return undefined;
  if (/^-?\d+$/.test(raw)) return [{ channel: 'chatA', id: raw }];
  const current = currentChat(action, 'chatA');
  return [{ channel: 'chatA', id: current !== undefined && /^-?\d+$/.test(current) ? current : raw }];
};

/** One id argument on a fixed channel. */
const plain =
  (channel: string, key: string): Reader =>
  (args) => {
    const id = idText(args[key]);
    return id === undefined ? undefined : [{ channel, id }];
  };

/** send_chatD: a name instead of a conversation id ("here", "the user") means the conversation of the current message. */
const chatD: Reader = (args, action) => {
  const raw = idText(args.channel_id);
  if (raw === undefined) return undefined;
  if (action?.source === 'chatD' && !/^[CGD][A-Za-z0-9]*$/.test(raw))
    return [{ channel: 'chatD', id: currentChat(action, 'chatD') ?? raw }];
  return [{ channel: 'chatD', id: raw }];
};

/** send_email: every address of the comma- or semicolon-separated list, `Name <addr>` read as addr. */
const email: Reader = (args) => {
  if (typeof args.to !== 'string') return undefined;
  const to = args.to
    .split(/[,;]/)
    .map((s) => s.trim())
    .filter(Boolean)
    .map((part) => ({ channel: 'email', id: (/<([^>]+)>\s*$/.exec(part)?.[1] ?? part).trim().toLowerCase() }));
  return to.length ? to : undefined;
};

/** send_file, send_voice_note, send_image: the recipient `jid` on the channel SPEC's detection picks. */
const messaging: Reader = (args, action) => {
  const jid = idText(args.jid);
  if (jid === undefined) return undefined;
  return [{ channel: detectChannel(idText(args.channel), action, jid), id: jid }];
};

/** react: `channel` and `chat_id`, each defaulting to the current message's, as the skill does. */
const react: Reader = (args, action) => {
  const channel = idText(args.channel) ?? (action ? detectChannel(undefined, action, '') : undefined);
  const chat = idText(args.chat_id) ?? idText(action?.metadata?.replyTo?.chatId);
  return channel && chat ? [{ channel, id: chat }] : undefined;
};

const READERS: Record<string, Reader> = {
  send_chatA: chatA,
  chatA_send_buttons: chatA,
  chatA_send_poll: chatA,
  chatA_edit_message: chatA,
  chatA_react: chatA,
  chatA_pin_message: chatA,
  send_chatB: plain('chatB', 'jid'),
  send_chatC: plain('chatC', 'channel_id'),
  send_chatD: chatD,
  send_email: email,
  send_file: messaging,
  send_voice_note: messaging,
  send_image: messaging,
  react,
};

/**
 * Where a call of an outbound skill would send, or undefined when that cannot be told from its arguments (an
 * unknown outbound skill, a missing or malformed recipient argument).
 */
export function recipientsOf(skill: string, args: unknown, action: Action | undefined): Address[] | undefined {
  const read = Object.hasOwn(READERS, skill) ? READERS[skill] : undefined;
  if (!read || args === null || typeof args !== 'object' || Array.isArray(args)) return undefined;
  return read(args as Args, action);
}
